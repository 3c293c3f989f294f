"""The series file of a target: the quilt-style order of its patches, with group labels as comments."""

from __future__ import annotations

from pathlib import Path

from .atomic_write import replace_file
from .errors import OverlayError
from .lint import series_problems
from .patchfile import Patch, decode, encode, parse_patch


def read_series(patch_dir: Path) -> list[str]:
    """Patch names in `patch_dir/series`, in order (comments and blank lines dropped).

    A missing series file is an error naming it: a misspelt folder must never apply nothing."""
    path = patch_dir / "series"
    try:
        text = decode(path.read_bytes())
    except FileNotFoundError as exc:
        raise OverlayError(f"{path}: series file not found (an empty one lists no patch)") from exc
    names = []
    for raw in text.splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry:
            names.append(entry)
    return names


def write_series(patch_dir: Path, names: list[str], base: str | None = None) -> None:
    """Rewrite the series file with `names`, keeping its comments where they were (a group label above
    its patch, the header on top, trailing comments last); `base` updates `# base-commit:`."""
    path = patch_dir / "series"
    lines = decode(path.read_bytes()).splitlines()
    if base is not None:
        lines = [line for line in lines if not line.startswith("# base-commit:")]
    blocks: dict[str, list[str]] = {}
    block: list[str] = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            block.append(line)
        else:
            blocks[line.strip()], block = block, []
    header, trailer = block, []
    if blocks:
        first = next(iter(blocks))
        split = max((i + 1 for i, line in enumerate(blocks[first]) if not line.strip()), default=0)
        header, blocks[first], trailer = blocks[first][:split], blocks[first][split:], block
    if base is not None:
        end = len(header)
        while end and not header[end - 1].strip():
            end -= 1  # the line goes above the header's closing blank lines
        header = [*header[:end], f"# base-commit: {base}", *header[end:]]
    out = list(header)
    for name in names:
        out += [*blocks.get(name, []), name]
    replace_file(path, encode("\n".join([*out, *trailer]) + "\n"))


def load_series(patch_dir: Path) -> list[Patch]:
    """The parsed series, after the lint passed (otherwise one error listing every problem)."""
    names = read_series(patch_dir)
    problems = series_problems(patch_dir, names)
    if problems:
        raise OverlayError("The patch series is not valid:\n  " + "\n  ".join(problems))
    return [parse_patch(patch_dir / name) for name in names]
