"""One applied checkout: its private state in `.git/streampetr-dali/`, its files with git modes.

Shared by apply, refresh, edit and rebase: the stamp (what the last apply wrote), the private
index the series is applied to, the checkout lock, and reading/writing work-tree files the way
git stores them (100644, 100755, or 120000 for a symlink, whose content is the link target).
"""

from __future__ import annotations

import json
import os
import stat
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from .faults import kill_point
from .gitcmd import blob_sha, git, git_out
from .lock import hold

STATE_DIR = "streampetr-dali"
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}
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


def gitdir(checkout: Path) -> Path:
    """The checkout's git directory (`.git` itself, or where a `.git` file points)."""
    dot_git = checkout / ".git"
    if dot_git.is_dir():
        return dot_git.resolve()
    return Path(git_out("rev-parse", "--absolute-git-dir", cwd=checkout))


def state_dir(checkout: Path) -> Path:
    """`.git/streampetr-dali/` of the checkout (created on demand)."""
    path = gitdir(checkout) / STATE_DIR
    path.mkdir(exist_ok=True)
    return path


def checkout_lock(checkout: Path, command: str) -> AbstractContextManager[None]:
    """The lock serialising apply, refresh, edit and rebase on `checkout`."""
    return hold(state_dir(checkout) / "lock", command, checkout.name)


def index_env(checkout: Path) -> dict[str, str]:
    """Environment selecting the private index the series is applied to."""
    return {"GIT_INDEX_FILE": str(state_dir(checkout) / "series.index")}


def clear_stale_index_lock(checkout: Path) -> None:
    """Remove the private index's `.lock` a killed git left behind (call with the checkout lock held)."""
    (state_dir(checkout) / "series.index.lock").unlink(missing_ok=True)


def read_stamp(checkout: Path) -> dict | None:
    """The stamp of the last completed apply, or None."""
    path = state_dir(checkout) / "stamp.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_stamp(checkout: Path, stamp: dict) -> None:
    """Replace the stamp atomically."""
    write_atomic(state_dir(checkout) / "stamp.json", json.dumps(stamp, indent=1, sort_keys=True) + "\n")


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


def modified(checkout: Path) -> set[str]:
    """Tracked paths whose work-tree or index state differs from HEAD (`git status`)."""
    # no optional locks: a kill during this status must not leave .git/index.lock behind
    status = git(
        "status", "--porcelain", "-z", "--untracked-files=no", cwd=checkout, env={"GIT_OPTIONAL_LOCKS": "0"}
    ).stdout  # not stripped
    return {entry[3:] for entry in status.split("\0") if entry}
