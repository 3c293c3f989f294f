"""Files the way git stores them: a mode (100644, 100755, or 120000 for a symlink, whose content is
the link target) and the bytes."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .gitcmd import blob_sha

SYMLINK = "120000"


@dataclass(frozen=True)
class Blob:
    """What a path holds, as git sees it: a mode and the bytes (a symlink's target for 120000)."""

    mode: str
    data: bytes

    @property
    def state(self) -> list[str]:
        """[mode, blob id]: what the stamp and the journal record."""
        return [self.mode, blob_sha(self.data)]


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
