"""Who uses the upstream env now: the claims of the jobs that run from it, and the build lock.

A job's claim is a file beside the env on which its process holds a shared `flock`; a build takes the
exclusive build lock, then waits until no claim's `flock` is held (a free one is stale and removed).
The protocol: docs/upstream-env.md#jobs-running-from-the-env.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import EnvBuildError
from .paths import ENV_DIR

CLAIM_VAR = "STREAMPETR_UPSTREAM_CLAIM"  # the claim this process (or its parent session) holds
POLL_S = 0.2
PROGRESS_S = 30.0


def lock_path(env: Path) -> Path:
    return env.parent / f".{env.name}.lock"


def claims_dir(env: Path) -> Path:
    return env.parent / f".{env.name}.claims"


def read_holder(data: bytes) -> dict | None:
    """A claim's (or the build lock's) holder: {pid, host, session, since}, or None when `data` is not
    one (damaged, empty, another format)."""
    try:
        holder = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(holder, dict):
        return None
    pid, host, session, since = (holder.get(k) for k in ("pid", "host", "session", "since"))
    if not (isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**31):
        return None
    if not (isinstance(host, str) and host and isinstance(session, str)):
        return None
    if not (isinstance(since, int | float) and not isinstance(since, bool) and 0 <= since < 1e11):
        return None
    return {"pid": pid, "host": host, "session": session, "since": float(since)}


def describe(holder: dict | None) -> str:
    """`pid 12 on node7 (train_dali, since 2026-12-03 10:00:01)`; a dead pid of this host says so."""
    if holder is None:
        return "an unreadable holder"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder["since"]))
    gone = ", no longer running" if holder["host"] == _host() and not _alive(holder["pid"]) else ""
    return f"pid {holder['pid']} on {holder['host']} ({holder['session']}, since {since}{gone})"


@contextmanager
def claim_env(
    session: str, *, env: Path = ENV_DIR, say: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Hold a claim named after `session` on `env` (the OpenMMLab env unless told) while the block
    runs (a build waits for it); yields the claim file. Waits, saying so, while a build holds the
    build lock. Check that the env is current after claiming: a build may have changed it before the
    claim was written."""
    say = say or _stderr
    folder = claims_dir(env)
    folder.mkdir(parents=True, exist_ok=True)
    lock = os.open(lock_path(env), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(
            lock,
            lock_path(env),
            fcntl.LOCK_SH,
            lambda: f"waits for the build of {env} by {_builder(env)}",
            say,
        )
        # written and locked under the build lock's shared side: no build scans the claims meanwhile
        path = folder / f"{_safe(_host())}-{os.getpid()}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _lock(fd, path, fcntl.LOCK_SH, lambda: "", say)
            os.write(fd, _me(session))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
    finally:
        os.close(lock)  # new claims and builds may go on; a build now waits for this claim
    before = os.environ.get(CLAIM_VAR)
    os.environ[CLAIM_VAR] = str(path)  # a build started from this session would wait for it: refused
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop(CLAIM_VAR, None)
        else:
            os.environ[CLAIM_VAR] = before
        path.unlink(missing_ok=True)
        os.close(fd)


@contextmanager
def build_lock(env: Path, session: str, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """One build of `env` at a time, and no new claim meanwhile; the lock file names its holder."""
    say = say or _stderr
    env.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(env), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(
            fd,
            lock_path(env),
            fcntl.LOCK_EX,
            lambda: f"waits for another build of {env} by {_builder(env)}",
            say,
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, _me(session), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def wait_for_claims(env: Path, what: str, say: Callable[[str], None] | None = None) -> None:
    """Under the build lock: return once no job holds a claim on `env`, removing stale claims by name
    and saying whom it waits for (at once, then every `PROGRESS_S`). A build inside a session that
    holds a claim itself is refused: it would wait for itself."""
    say = say or _stderr
    started, said = time.monotonic(), None
    while True:
        live = live_claims(env, say)
        if not live:
            return
        own = os.environ.get(CLAIM_VAR)
        mine = [text for path, text in live if own and Path(own) == path]
        if mine:
            raise EnvBuildError(
                f"{what} must change {env}, but runs inside a session that holds a claim on it "
                f"({mine[0]}): it cannot wait for itself; run the build before that session, or on its own"
            )
        if said is None or time.monotonic() - said >= PROGRESS_S:
            waited = f", waiting {time.monotonic() - started:.0f} s" if said is not None else ""
            jobs = "; ".join(text for _, text in live)
            say(f"upstream env: {what} waits for {len(live)} job(s) running from {env}{waited}: {jobs}")
            said = time.monotonic()
        time.sleep(POLL_S)


def live_claims(env: Path, say: Callable[[str], None]) -> list[tuple[Path, str]]:
    """(path, description) of every claim whose job holds its lock; a claim whose lock is free (its job
    ended or died, on this host or another) is removed, saying so."""
    live = []
    try:
        names = sorted(os.listdir(claims_dir(env)))
    except FileNotFoundError:
        return []
    for name in names:
        path = claims_dir(env) / name
        if name.startswith("."):  # NFS's `.nfs*` of a released claim
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:  # released meanwhile
            continue
        except OSError as exc:
            raise EnvBuildError(f"cannot open the claim {path}: {exc}") from None
        try:
            text = describe(read_holder(os.pread(fd, 4096, 0)))
            if _try_lock(fd, fcntl.LOCK_EX, path):
                path.unlink(missing_ok=True)
                say(f"upstream env: removed a stale claim, {text}, whose job is gone ({path})")
            else:
                live.append((path, f"{text} [{name}]"))
        finally:
            os.close(fd)
    return live


def _lock(fd: int, path: Path, op: int, waiting: Callable[[], str], say: Callable[[str], None]) -> None:
    """`flock(fd, op)`, saying whom it waits for (at once, then every `PROGRESS_S`) while it cannot."""
    started, said = time.monotonic(), None
    while not _try_lock(fd, op, path):
        if said is None or time.monotonic() - said >= PROGRESS_S:
            waited = f" ({time.monotonic() - started:.0f} s so far)" if said is not None else ""
            say(f"upstream env: this {'build' if op == fcntl.LOCK_EX else 'session'} {waiting()}{waited}")
            said = time.monotonic()
        time.sleep(POLL_S)


def _try_lock(fd: int, op: int, path: Path) -> bool:
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise EnvBuildError(
            f"cannot lock {path}: {exc} (the env's claims need file locks: on NFS, a mount "
            "with locking, not `nolock`)"
        ) from None
    return True


def _builder(env: Path) -> str:
    try:
        return describe(read_holder(lock_path(env).read_bytes()))
    except OSError:
        return describe(None)


def _me(session: str) -> bytes:
    holder = {"pid": os.getpid(), "host": _host(), "session": session, "since": time.time()}
    return json.dumps(holder).encode() + b"\n"


def _host() -> str:
    return socket.gethostname() or "localhost"


def _safe(host: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in host)[:64].lstrip(".") or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
