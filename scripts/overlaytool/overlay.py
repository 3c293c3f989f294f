"""Files the way git stores them (a mode: 100644, 100755, or 120000 for a symlink, whose content is the
link target; and the bytes), and the overlay: new files mirrored at the upstream root."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import OverlayError

SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}
SYMLINK = "120000"


@dataclass(frozen=True)
class Blob:
    """What a path holds, as git sees it: a mode and the bytes (a symlink's target for 120000)."""

    mode: str
    data: bytes

    @property
    def state(self) -> list[str]:
        """[mode, git blob id]: what the stamp and the journal record."""
        return [self.mode, hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()]


def blob_at(path: Path) -> Blob | None:
    """What `path` holds as git would store it (symlink target, exec bit); None when it is missing,
    a directory or another kind of file."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return Blob(SYMLINK, os.fsencode(os.readlink(path)))
    if not stat.S_ISREG(st.st_mode):
        return None
    return Blob("100755" if st.st_mode & stat.S_IXUSR else "100644", path.read_bytes())


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
