"""The files of a work tree the way git stores them (blob.py), read and written whole: a temporary
file and a rename, so a kill leaves the old content or the new, never half."""

from __future__ import annotations

import os
from pathlib import Path

from ..atomic_write import TMP_SUFFIX
from ..blob import SYMLINK, Blob, blob_at
from ..faults import kill_point
from ..gitcmd import git


def current(checkout: Path, rel: str) -> Blob | None:
    """What `rel` holds in the work tree (None: missing, or a directory)."""
    return blob_at(checkout / rel)


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
