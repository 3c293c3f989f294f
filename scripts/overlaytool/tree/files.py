"""Files the way git stores them (100644, 100755, or 120000 for a symlink, whose content is the
link target), read from and written to a work tree whole: a temporary file and a rename, so a
kill leaves the old content or the new, never half."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..faults import kill_point
from ..gitcmd import blob_sha, git

TMP_SUFFIX = ".streampetr-dali-tmp"
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


def current(checkout: Path, rel: str) -> Blob | None:
    """What `rel` holds in the work tree (None: missing, or a directory)."""
    path = checkout / rel
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return Blob(SYMLINK, os.fsencode(os.readlink(path)))
    if not stat.S_ISREG(st.st_mode):
        return None
    return Blob("100755" if st.st_mode & stat.S_IXUSR else "100644", path.read_bytes())


def current_state(checkout: Path, rel: str) -> list[str] | None:
    """[mode, blob id] of `rel` in the work tree, or None."""
    blob = current(checkout, rel)
    return None if blob is None else blob.state


def same_state(recorded: list[str] | str | None, state: list[str] | None) -> bool:
    """Does a recorded state match? (A bare blob id, from a stamp older than modes, matches any mode.)"""
    if isinstance(recorded, str):
        return state is not None and state[1] == recorded
    return recorded == state


def put(path: Path, blob: Blob | None, step: str | None = None) -> None:
    """Make `path` hold `blob` (None: delete) via a temporary file and a rename, with its git mode."""
    if blob is None:
        if path.is_symlink() or path.is_file():
            path.unlink()
            _prune_empty_dirs(path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_SUFFIX}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    if blob.mode == SYMLINK:
        os.symlink(os.fsdecode(blob.data), tmp)
    else:
        perm = 0o755 if blob.mode == "100755" else 0o644
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perm)
        with os.fdopen(fd, "wb") as f:
            f.write(blob.data)
        os.chmod(tmp, perm)  # the umask may have cleared bits
    if step:
        kill_point(f"{step}:tmp")
    os.replace(tmp, path)


def remove_leftover_tmp(checkout: Path, rels: list[str]) -> None:
    """Delete the temporary files a killed `put` may have left next to `rels`."""
    for rel in rels:
        tmp = (checkout / rel).with_name(f".{Path(rel).name}{TMP_SUFFIX}")
        if tmp.is_symlink() or tmp.is_file():
            tmp.unlink()


def _prune_empty_dirs(directory: Path) -> None:
    while directory.is_dir() and not any(directory.iterdir()) and not (directory.parent / ".git").exists():
        directory.rmdir()
        directory = directory.parent


def modified(checkout: Path) -> set[str]:
    """Tracked paths whose work-tree or index state differs from HEAD (`git status`)."""
    # no optional locks: a kill during this status must not leave .git/index.lock behind
    status = git(
        "status", "--porcelain", "-z", "--untracked-files=no", cwd=checkout, env={"GIT_OPTIONAL_LOCKS": "0"}
    ).stdout  # not stripped
    return {entry[3:] for entry in status.split("\0") if entry}
