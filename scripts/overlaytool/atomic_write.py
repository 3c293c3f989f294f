"""The one way overlaytool (and forkwatch) replaces a file: whole, and on disk when the call returns.

A temporary file beside the target, fsynced, renamed over it, then the folder fsynced: a kill or a
power cut leaves the old content or the new. Apply's journal needs this durability (docs/apply.md,
crash-consistent); every file gets it, at a few milliseconds a file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .faults import kill_point

TMP_SUFFIX = ".streampetr-dali-tmp"


def replace_file(
    path: Path, data: bytes | str, *, mode: int | None = None, link: bool = False, step: str | None = None
) -> None:
    """Make `path` hold `data` (a str as UTF-8): a temporary file, fsync, rename, fsync of the folder.

    `mode`: the permission bits exactly, whatever the umask; `link`: a symlink to `data`; `step`: the kill
    point `<step>:tmp` before the rename. Any failure removes the temporary file."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    tmp.unlink(missing_ok=True)  # left by a killed process that had this pid
    try:
        if link:
            os.symlink(os.fsdecode(raw), tmp)
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
                if mode is not None:
                    os.fchmod(f.fileno(), mode)  # the umask may have cleared bits
                f.flush()
                os.fsync(f.fileno())
        if step:
            kill_point(f"{step}:tmp")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)  # the rename itself, durable
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def leftovers(folder: Path, name: str | None = None) -> list[Path]:
    """The temporary files killed writes left in `folder`: those of the file `name`, or of any file."""
    pattern = re.compile(rf"\.{re.escape(name) if name else '.+'}\.\d+{re.escape(TMP_SUFFIX)}")
    try:
        return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name))
    except (FileNotFoundError, NotADirectoryError):
        return []


def remove_leftovers(folder: Path, name: str | None = None) -> None:
    """Delete `leftovers(folder, name)`. Call it holding the lock that serialises the writers of
    `folder`: a live writer's temporary file looks the same."""
    for tmp in leftovers(folder, name):
        tmp.unlink(missing_ok=True)
