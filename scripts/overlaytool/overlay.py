"""The overlay: new files (and symlinks) mirrored at the upstream root, as git would store them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .files import SYMLINK, Blob

SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def overlay_files(overlay_dir: Path | None) -> dict[str, Path]:
    """Overlay files (and symlinks) by their path relative to the upstream root, caches skipped."""
    if overlay_dir is None or not overlay_dir.is_dir():
        return {}
    files = {}
    for path in sorted(overlay_dir.rglob("*")):
        rel = path.relative_to(overlay_dir)
        wanted = not SKIP_NAMES.intersection(rel.parts) and path.suffix != ".pyc"
        if wanted and (path.is_file() or path.is_symlink()):
            files[rel.as_posix()] = path
    return files


def overlay_blob(path: Path) -> Blob:
    """An overlay file as git would store it (symlink target, exec bit)."""
    if path.is_symlink():
        return Blob(SYMLINK, os.fsencode(os.readlink(path)))
    return Blob("100755" if path.stat().st_mode & stat.S_IXUSR else "100644", path.read_bytes())
