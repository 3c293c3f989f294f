"""Replace a file whole: a temporary file, fsync and rename, so a reader or a kill sees the old
content or the new, never half."""

from __future__ import annotations

import os
from pathlib import Path

TMP_SUFFIX = ".streampetr-dali-tmp"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` via a temporary file, fsync and rename: old or new, never half."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
