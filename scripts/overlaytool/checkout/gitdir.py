"""One applied checkout's private state in `.git/streampetr-dali/`.

Shared by apply, refresh, edit and rebase: the stamp (what the last apply wrote), the private
index the series is applied to, and the checkout lock.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path

from ..gitcmd import git_out
from ..lock import hold
from .files import write_atomic

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
