"""Build one frame store: ``python -m dali_streampetr.frames.store_build '<spec json>'`` (:mod:`.store`
starts it and reads its result, the last stdout line). Under an ``flock`` it looks for the store
again, so ranks that start together build it once; it runs without the cyclic garbage collector and
exits without freeing the parsed pickle."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .frame_errors import InfoFileChanged, InfoSchemaError, StoreDamaged, StoreUntrusted
from .info_columns import info_columns
from .records import load_info_file
from .store import RESULT_TAG
from .store_file import (
    check_folder,
    check_owner,
    open_private,
    open_store,
    write_store,
)
from .unpickle import gc_paused

LOCK_TIMEOUT_ENV = "STREAMPETR_DALI_LOCK_TIMEOUT"
KILL_AT_ENV = "STREAMPETR_DALI_TEST_KILL_AT"  # test-only: SIGKILL this process after the named step
TRACE_ENV = "STREAMPETR_DALI_TEST_TRACE"  # test-only: append every step's name to this file
PARSED: list = []  # the parsed info files, freed by the process's exit (not object by object)


def kill_point(step: str) -> None:
    """Test-only fault injection: append ``step`` to ``$STREAMPETR_DALI_TEST_TRACE``, and die by
    SIGKILL after it when ``$STREAMPETR_DALI_TEST_KILL_AT`` names it (no ``finally`` runs, as after
    a real kill). Unset in normal use."""
    if trace := os.environ.get(TRACE_ENV):
        with open(trace, "a") as f:
            f.write(f"{step}\n")
    if os.environ.get(KILL_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _open_lock(path: Path) -> int:
    """The lock file, created ``O_EXCL | O_NOFOLLOW`` or, when there, opened ``O_NOFOLLOW`` and
    checked: a regular file with one link, of this user unless the folder is declared shared."""
    try:
        return open_private(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, "lock file")
    except StoreUntrusted:
        pass  # there already (a lock is kept between builds): opened and checked below
    try:
        fd = open_private(path, os.O_RDWR, "lock file")
    except PermissionError:
        fd = open_private(path, os.O_RDONLY, "lock file")  # another user's, in a folder declared shared
    st = os.fstat(fd)
    try:
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise StoreUntrusted(f"the frame store's lock file {path} is not a plain file with one link")
        check_owner(st, "lock file", path)
    except StoreUntrusted:
        os.close(fd)
        raise
    return fd


def _lock(path: Path) -> int:
    """An exclusive flock on ``path`` (released when the descriptor closes or the process dies)."""
    fd = _open_lock(path)
    limit = float(os.environ.get(LOCK_TIMEOUT_ENV) or 600)
    deadline = time.monotonic() + limit
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise TimeoutError(
                    f"gave up after {limit:g} s waiting for another process building the frame store "
                    f"(lock {path}); raise ${LOCK_TIMEOUT_ENV} to wait longer"
                ) from None
            time.sleep(0.05)
    if os.fstat(fd).st_uid == os.geteuid():
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def build_store(ann_file: Path, class_names: Sequence[str], trusted: bool, path: Path, key: dict) -> dict:
    """Build the store at ``path`` unless a good one is there once the lock is held; returns what
    happened: ``built`` (bool), ``rebuilt_because`` (why the old file was not trusted, or None)."""
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    check_folder(path.parent)
    fd = _lock(path.with_suffix(".lock"))
    try:
        kill_point("frame-store:lock")
        try:
            open_store(path, key)
            return {"built": False, "rebuilt_because": None}
        except FileNotFoundError:
            reason = None
        except StoreDamaged as exc:
            reason = str(exc)
        for stale in path.parent.glob(f".{path.name}.tmp-*"):  # left by a killed build
            stale.unlink(missing_ok=True)
        t0 = time.perf_counter()
        with gc_paused():
            data, sha256 = load_info_file(ann_file, trusted_pickle=trusted)
            PARSED.append(data)
            columns, meta = info_columns(data, class_names, ann_file)
        if sha256 != key["info_sha256"]:
            raise InfoFileChanged(f"{ann_file} changed while its frame store was built; start again")
        kill_point("frame-store:columns")
        meta = {**meta, "info_file": str(ann_file), "frames": len(columns["timestamp"])}
        write_store(path, columns, key, meta, kill_point)
        return {"built": True, "rebuilt_because": reason, "seconds": time.perf_counter() - t0}
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    gc.disable()  # see the module doc
    spec = json.loads((argv or sys.argv[1:])[0])
    try:
        result = build_store(
            Path(spec["ann_file"]), spec["class_names"], spec["trusted"], Path(spec["path"]), spec["key"]
        )
    except (InfoSchemaError, FileNotFoundError, InfoFileChanged, StoreUntrusted) as exc:
        result = {"error": type(exc).__name__, "message": str(exc)}
    except OSError as exc:  # the store folder: not writable, full, ...
        result = {"error": "OSError", "message": str(exc)}
    print(RESULT_TAG + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # without freeing the parsed pickle's objects one by one
