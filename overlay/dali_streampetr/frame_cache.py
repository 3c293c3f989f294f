"""One frame store per info file and node: built once, then mapped read-only by every rank and run.

The store of an info file is ``<folder>/<digest>.frames`` (:mod:`.store_file`), where the digest is
taken over its key: the info file's SHA-256, the class names, ``trusted_pickle``, the store format
version and the source of the modules that compute the frames. The folder is
``$STREAMPETR_DALI_FRAME_STORES``, else ``frame-stores`` in the project's cache
(``$STREAMPETR_DALI_CACHE``, else ``$XDG_CACHE_HOME/streampetr-dali``, else
``~/.cache/streampetr-dali``): nothing is written next to the user's files.

A missing store is built in a child process (``python -m dali_streampetr.frame_cache``), so the
parsed pickle's millions of Python objects never live in a training process; the child takes an
``flock`` on ``<digest>.lock`` first and looks again, so ranks that start together build it once
(the others wait). A store that is damaged, truncated or written for another key is rebuilt, with
one warning. A killed build leaves only a temporary file, which the next build removes.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .info_schema import InfoSchemaError
from .store_file import StoreDamaged, open_store, write_store

STORE_FORMAT = 1
FOLDER_ENV = "STREAMPETR_DALI_FRAME_STORES"
LOCK_TIMEOUT_ENV = "STREAMPETR_DALI_LOCK_TIMEOUT"
KILL_AT_ENV = "STREAMPETR_DALI_TEST_KILL_AT"  # test-only: SIGKILL this process after the named step
TRACE_ENV = "STREAMPETR_DALI_TEST_TRACE"  # test-only: append every step's name to this file
# the modules whose code decides what a store holds: a change to any of them makes a new key
CODE = ("infos.py", "info_schema.py", "unpickle.py", "frame_columns.py", "store_file.py", "frame_cache.py")
RESULT_TAG = "FRAME-STORE "
logger = logging.getLogger("dali_streampetr")


class StoreUnwritable(OSError):
    """The store folder cannot be written (the loader then keeps the frames in its own process)."""


def store_folder() -> Path:
    """Where the frame stores live (see the module doc)."""
    if override := os.environ.get(FOLDER_ENV):
        return Path(override).expanduser()
    if cache := os.environ.get("STREAMPETR_DALI_CACHE"):
        return Path(cache).expanduser() / "frame-stores"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "streampetr-dali" / "frame-stores"


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@functools.cache
def code_digest() -> str:
    """SHA-256 of the modules in :data:`CODE` (read once per process, at the first use)."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in CODE:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()


def store_key(ann_file: Path, class_names: Sequence[str], trusted: bool) -> dict[str, Any]:
    return {
        "format": STORE_FORMAT,
        "code": code_digest(),
        "info_sha256": file_sha256(ann_file),
        "class_names": list(class_names),
        "trusted_pickle": bool(trusted),
    }


def store_path(folder: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return folder / f"{digest}.frames"


def kill_point(step: str) -> None:
    """Test-only fault injection: append ``step`` to ``$STREAMPETR_DALI_TEST_TRACE``, and die by
    SIGKILL after it when ``$STREAMPETR_DALI_TEST_KILL_AT`` names it (no ``finally`` runs, as after
    a real kill). Unset in normal use."""
    if trace := os.environ.get(TRACE_ENV):
        with open(trace, "a") as f:
            f.write(f"{step}\n")
    if os.environ.get(KILL_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _lock(path: Path) -> int:
    """An exclusive flock on ``path`` (released when the descriptor closes or the process dies)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def build_store(ann_file: Path, class_names: Sequence[str], trusted: bool, path: Path, key: dict) -> dict:
    """Build the store at ``path`` unless a good one is there once the lock is held; returns what
    happened: ``built`` (bool), ``rebuilt_because`` (why the old file was not trusted, or None)."""
    from .frame_columns import to_columns
    from .infos import frame_records, read_infos

    path.parent.mkdir(parents=True, exist_ok=True)
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
        frames = frame_records(read_infos(ann_file, trusted_pickle=trusted), class_names)
        columns, meta = to_columns(frames)
        del frames
        kill_point("frame-store:columns")
        meta = {**meta, "info_file": str(ann_file), "frames": len(columns["timestamp"])}
        write_store(path, columns, key, meta, kill_point)
        return {"built": True, "rebuilt_because": reason, "seconds": time.perf_counter() - t0}
    finally:
        os.close(fd)


def _child_env() -> dict[str, str]:
    paths = [p for p in sys.path if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def ensure_store(ann_file: Path, class_names: Sequence[str], trusted: bool) -> tuple[dict, dict, Path, dict]:
    """(columns, meta, path, key) of the info file's store, the columns mapped read-only; built first
    when missing or bad. Raises what reading the info file raises (:class:`.info_schema.InfoSchemaError`),
    :class:`StoreUnwritable` when the store folder cannot be written."""
    key = store_key(ann_file, class_names, trusted)
    path = store_path(store_folder(), key)
    try:
        return (*open_store(path, key), path, key)
    except (OSError, StoreDamaged):
        pass  # the builder looks again under the lock, and says why it rebuilds (or cannot)
    spec = {"ann_file": str(ann_file), "class_names": list(class_names), "trusted": trusted,
            "path": str(path), "key": key}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "dali_streampetr.frame_cache", json.dumps(spec)],
        stdout=subprocess.PIPE, text=True, env=_child_env(),
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    if not lines:
        raise RuntimeError(
            f"building the frame store of {ann_file} failed (exit {proc.returncode}, see the output above)"
        )
    result = json.loads(lines[-1][len(RESULT_TAG) :])
    if result.get("error") == "OSError":
        raise StoreUnwritable(f"cannot write the frame store {path}: {result['message']}")
    if "error" in result:
        raise {"InfoSchemaError": InfoSchemaError, "FileNotFoundError": FileNotFoundError}.get(
            result["error"], RuntimeError
        )(result["message"])
    if result["rebuilt_because"]:
        logger.warning(f"DALI loader: the frame store {path} {result['rebuilt_because']}: rebuilt it")
    elif result["built"]:
        logger.info(f"DALI loader: wrote the frame store {path} ({result['seconds']:.1f} s)")
    return (*open_store(path, key), path, key)


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv or sys.argv[1:])[0])
    try:
        result = build_store(
            Path(spec["ann_file"]), spec["class_names"], spec["trusted"], Path(spec["path"]), spec["key"]
        )
    except (InfoSchemaError, FileNotFoundError) as exc:
        result = {"error": type(exc).__name__, "message": str(exc)}
    except OSError as exc:  # the store folder: not writable, full, ...
        result = {"error": "OSError", "message": str(exc)}
    print(RESULT_TAG + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
