"""Serialise the tools: one `flock` per checkout and per cache mirror, re-entrant within a process; a
second run waits up to `--lock-timeout` (docs/apply.md). The lock file names its holder for messages.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import OverlayError
from .faults import kill_point

TIMEOUT_ENV = "STREAMPETR_DALI_LOCK_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
POLL_S = 0.05

_held: dict[Path, tuple[int, int]] = {}  # lock path -> (fd, depth), this process only


def timeout_s() -> float:
    """How long to wait for a lock: `$STREAMPETR_DALI_LOCK_TIMEOUT` seconds, else 600."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError as exc:
        raise OverlayError(f"${TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from exc


def holder(path: Path) -> str:
    """'another apply, pid 123, started 2026-12-01 00:58:01 UTC' from the lock file (best effort)."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(info["started"]))
        return f"another {info['command']}, pid {info['pid']}, started {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not written its name yet)"


@contextmanager
def hold(path: Path, command: str, name: str, shared: bool = False) -> Iterator[None]:
    """Hold the lock at `path` (created if needed) for `command`; wait for the holder, then fail.

    `name` (the checkout or mirror) names the kill point right after the lock is taken."""
    path = path.resolve()
    if path in _held:
        fd, depth = _held[path]
        _held[path] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[path] = (fd, _held[path][1] - 1)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, path, command, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        info = {"pid": os.getpid(), "command": command, "started": time.time()}
        os.ftruncate(fd, 0)  # shared holders overwrite each other: any one of them is worth naming
        os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)
        kill_point(f"{name}:lock")
        _held[path] = (fd, 1)
        try:
            yield
        finally:
            del _held[path]
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def _acquire(fd: int, path: Path, command: str, mode: int) -> None:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    limit = timeout_s()
    who = holder(path)
    print(f"{command}: waiting for {who} (lock {path}; up to {limit:g} s)", file=sys.stderr, flush=True)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    raise OverlayError(
        f"{command}: gave up after {limit:g} s waiting for {holder(path)} (lock {path}).\n"
        f"Let it finish, or wait longer: --lock-timeout SECONDS (or ${TIMEOUT_ENV})."
    )
