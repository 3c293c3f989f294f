"""The overlay: new files (and symlinks) mirrored at the upstream root, as git would store them."""

from __future__ import annotations

from pathlib import Path

from .blob import Blob, blob_at
from .errors import OverlayError

SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def overlay_files(overlay_dir: Path | None, moves: tuple[tuple[str, str], ...] = ()) -> dict[str, Path]:
    """Overlay files (and symlinks) by their path relative to the upstream root, caches skipped;
    `moves` (a target's `overlay_moves`) places a folder of the overlay elsewhere in the tree."""
    if overlay_dir is None or not overlay_dir.is_dir():
        return {}
    files = {}
    for path in sorted(overlay_dir.rglob("*")):
        rel = path.relative_to(overlay_dir)
        wanted = not SKIP_NAMES.intersection(rel.parts) and path.suffix != ".pyc"
        if wanted and (path.is_file() or path.is_symlink()):
            files[place(rel.as_posix(), moves)] = path
    return files


def place(rel: str, moves: tuple[tuple[str, str], ...]) -> str:
    """Where the overlay file `rel` lands: under the new folder of the longest move naming its folder."""
    for old, new in sorted(moves, key=lambda m: -len(m[0])):
        if rel.startswith(old + "/"):
            return f"{new}/{rel[len(old) + 1 :]}"
    return rel


def overlay_blob(path: Path) -> Blob:
    """An overlay file as git would store it (symlink target, exec bit)."""
    blob = blob_at(path)
    if blob is None:
        raise OverlayError(f"{path}: the overlay file is gone, or no longer a file or a symlink")
    return blob
