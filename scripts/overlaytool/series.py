"""The patch series: `patches/series` (quilt-style order) and the patch files it names.

Also the series lint: missing files, unlisted patches, duplicates, paths escaping the tree, and
patches without a header (Subject plus a DEP-3 `Description` and `Forwarded`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import OverlayError

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    """One hunk: its header and the lines it expects (old) and writes (new)."""

    header: str
    old_start: int
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    """The part of a patch that touches one file."""

    old_path: str | None  # None for a new file
    new_path: str | None  # None for a deleted file
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass
class Patch:
    """A patch file of the series: header (everything before the diff) and the per-file diffs."""

    name: str
    path: Path
    header: str
    subject: str | None
    files: list[FilePatch]

    @property
    def text(self) -> bytes:
        return self.path.read_bytes()


def _strip_prefix(path: str) -> str | None:
    if path == "/dev/null":
        return None
    path = path.split("\t")[0]
    return path[2:] if path[:2] in ("a/", "b/") else path


def parse_patch(path: Path) -> Patch:
    """Split a git format-patch file into its header and per-file hunks."""
    lines = path.read_text().split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("diff --git ")), len(lines))
    header = "\n".join(lines[:start])
    subject = next(
        (line[len("Subject:") :].strip() for line in lines[:start] if line.startswith("Subject:")), None
    )
    if subject:
        subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", subject)
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    for line in lines[start:]:
        if line.startswith("diff --git "):
            current, hunk = FilePatch(None, None), None
            files.append(current)
            parts = line.split(" ")
            current.old_path, current.new_path = _strip_prefix(parts[2]), _strip_prefix(parts[3])
        elif current is None:
            continue
        elif hunk is None and line.startswith("--- "):
            current.old_path = _strip_prefix(line[4:])
        elif hunk is None and line.startswith("+++ "):
            current.new_path = _strip_prefix(line[4:])
        elif hunk is None and line.startswith("new file mode"):
            current.old_path = None
        elif hunk is None and line.startswith("deleted file mode"):
            current.new_path = None
        elif m := HUNK_RE.match(line):
            hunk = Hunk(header=line, old_start=int(m.group(1)))
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            if line[:1] in (" ", "-"):
                hunk.old_lines.append(line[1:])
            if line[:1] in (" ", "+"):
                hunk.new_lines.append(line[1:])
        elif line == "-- ":
            break  # format-patch signature separator
    return Patch(name=path.name, path=path, header=header, subject=subject, files=files)


def read_series(patch_dir: Path) -> list[str]:
    """Patch names in `patch_dir/series`, in order (comments and blank lines dropped)."""
    series = patch_dir / "series"
    if not series.exists():
        return []
    names = []
    for raw in series.read_text().splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry:
            names.append(entry)
    return names


def lint(patch_dir: Path) -> list[str]:
    """Every problem of the series as one message each; an empty list means clean."""
    problems: list[str] = []
    names = read_series(patch_dir)
    seen: set[str] = set()
    for name in names:
        where = f"{patch_dir / 'series'}: entry {name!r}"
        if name in seen:
            problems.append(f"{where}: listed twice")
        seen.add(name)
        if Path(name).is_absolute() or ".." in Path(name).parts or "/" in name:
            problems.append(f"{where}: must be a file name inside {patch_dir}")
            continue
        path = patch_dir / name
        if not path.is_file():
            problems.append(f"{where}: file does not exist")
            continue
        patch = parse_patch(path)
        if not patch.subject:
            problems.append(f"{path}: no 'Subject:' header")
        if not re.search(r"(?m)^Description:\s*\S", patch.header):
            problems.append(f"{path}: no DEP-3 'Description:' field in the header (say why)")
        if not re.search(r"(?m)^Forwarded:\s*\S", patch.header):
            problems.append(
                f"{path}: no DEP-3 'Forwarded:' field in the header (e.g. 'Forwarded: not-needed')"
            )
        if not patch.files:
            problems.append(f"{path}: contains no diff")
        for fp in patch.files:
            for p in (fp.old_path, fp.new_path):
                if p is not None and (p.startswith("/") or ".." in Path(p).parts or p.startswith(".git/")):
                    problems.append(f"{path}: file path {p!r} escapes the upstream tree")
    for extra in sorted(p.name for p in patch_dir.glob("*.patch") if p.name not in seen):
        problems.append(f"{patch_dir / extra}: not listed in {patch_dir / 'series'}")
    return problems


def load_series(patch_dir: Path) -> list[Patch]:
    """The parsed series, after the lint passed (otherwise one error listing every problem)."""
    problems = lint(patch_dir)
    if problems:
        raise OverlayError("The patch series is not valid:\n  " + "\n  ".join(problems))
    return [parse_patch(patch_dir / name) for name in read_series(patch_dir)]
