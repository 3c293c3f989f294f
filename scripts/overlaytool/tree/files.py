"""The files of a work tree the way git stores them (overlay.py), read and written whole (atomic_write.py),
so a kill leaves the old content or the new, never half."""

from __future__ import annotations

from pathlib import Path

from ..atomic_write import replace_file
from ..gitcmd import git
from ..overlay import SYMLINK, Blob, blob_at


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
    """Make `path` hold `blob` (None: delete) with its git mode, atomically (`replace_file`; `step`
    names the kill point between the temporary file and the rename)."""
    if blob is None:
        if path.is_symlink() or path.is_file():
            path.unlink()
            _prune_empty_dirs(path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if blob.mode == SYMLINK:
        replace_file(path, blob.data, link=True, step=step)
    else:
        replace_file(path, blob.data, mode=0o755 if blob.mode == "100755" else 0o644, step=step)


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
