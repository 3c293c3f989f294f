"""A checkout's git directory and the tool's private state in it (`.git/streampetr-dali/`), with
the lock that serialises apply, refresh, edit and rebase on the checkout."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from ..gitcmd import git_out
from ..lock import hold

STATE_DIR = "streampetr-dali"


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
