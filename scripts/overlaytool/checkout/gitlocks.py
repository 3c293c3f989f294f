"""Git's own `index.lock` in a checkout: removed when provably left by the tool's own killed git (the
record `run_index_git` writes), else reported with the command that clears it (docs/apply.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..atomic_write import replace_file
from ..errors import OverlayError
from ..faults import kill_point
from ..gitcmd import git_env
from .gitdir import gitdir, state_dir

RECORD = "index-git.json"
SETTLE_S = 2.0  # a concurrent git (an IDE's status) holds index.lock for far less than this


def _start_ticks(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), None when it
    is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def run_index_git(checkout: Path, step: str, *args: str) -> None:
    """Run `git args` in `checkout` (a command that takes its index.lock) with the record above."""
    record = state_dir(checkout) / RECORD
    began = time.time()
    proc = subprocess.Popen(
        ["git", *args],
        cwd=checkout,
        env=git_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
    )
    replace_file(record, json.dumps({"pid": proc.pid, "ticks": _start_ticks(proc.pid), "began": began}))
    kill_point(f"{step}:git-{args[0]}:started")
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise OverlayError(f"git {' '.join(args)} failed in {checkout}:\n{err.strip()}")
    record.unlink()


def _open_by_anyone(path: Path) -> bool:
    """Whether a process this user may inspect holds `path` open (best effort, /proc)."""
    target = str(path)
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                if os.readlink(fd) == target:
                    return True
        except OSError:
            continue
    return False


def _provably_ours(lock: Path, record_path: Path) -> bool:
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        created = lock.stat().st_mtime
    except (OSError, ValueError):
        return False
    ticks = _start_ticks(int(record["pid"]))
    gone = ticks is None or ticks != record["ticks"]
    return gone and created >= record["began"] - 1.0 and not _open_by_anyone(lock)


def clear_stale_index_lock_of_checkout(checkout: Path) -> None:
    """Remove `.git/index.lock` of the tool's own killed git, else raise naming the way out
    (call with the checkout lock held)."""
    lock = gitdir(checkout) / "index.lock"
    record = state_dir(checkout) / RECORD
    if lock.exists() and _provably_ours(lock, record):
        lock.unlink()
        print(
            f"apply: removed .git/index.lock left by apply's own killed `git reset` in {checkout}",
            file=sys.stderr,
        )
    deadline = time.monotonic() + SETTLE_S
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if lock.exists():
        raise OverlayError(
            f"{lock} exists: a git command is running in {checkout}, or one was killed and left it "
            "(every git command that writes the index fails until it is gone). If no git runs there "
            f"(`pgrep -a git`), clear it with:\n  rm {lock}\nNothing was changed in {checkout}."
        )
    record.unlink(missing_ok=True)
