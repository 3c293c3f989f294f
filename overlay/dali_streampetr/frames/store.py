"""One frame store per info file and node: built once, then mapped read-only by every rank and run.

The store of an info file is ``<folder>/<digest>.frames`` (:mod:`.store_file`), where the digest is
taken over its key: the info file's SHA-256, the class names, ``trusted_pickle``, the store format
version and the source of the modules that compute the frames. The folder is
``$STREAMPETR_DALI_FRAME_STORES``, else ``frame-stores`` in the project's cache
(``$STREAMPETR_DALI_CACHE``, else ``$XDG_CACHE_HOME/streampetr-dali``, else
``~/.cache/streampetr-dali``): nothing is written next to the user's files.

A folder, store or lock file owned by another user or writable by group or others is refused by
name (:class:`.store_file.StoreUntrusted`) unless ``$STREAMPETR_DALI_FRAME_STORES_SHARED=1``
declares the folder shared: then every user who can write there is trusted to write true frames
(the checks still catch damage, not a forged store). A folder the builder creates is ``0755``.

A missing or untrusted store is built by a child process (:mod:`.store_build`), so the parsed
pickle's millions of Python objects never live in a training process; :func:`load_frames` hands the
loader the frames as views of the mapped store (or, when the store folder cannot be written, of
columns computed in the process).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .image_paths import PathResolver, path_resolver
from .info_schema import InfoSchemaError
from .store_file import StoreDamaged, StoreUntrusted, check_folder, open_store
from .store_view import FrameStore

STORE_FORMAT = 2  # 2: the digest covers the header; checked layout
FOLDER_ENV = "STREAMPETR_DALI_FRAME_STORES"
# the modules whose code decides what a store holds: a change to any of them makes a new key
CODE = (
    "records.py", "info_schema.py", "unpickle.py", "info_columns.py", "columns.py", "store_file.py",
    "store_build.py", "store.py",
)  # fmt: skip
RESULT_TAG = "FRAME-STORE "  # the builder's last stdout line: this tag, then its result as JSON
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


def _child_env() -> dict[str, str]:
    paths = [p for p in sys.path if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


ERRORS = {"InfoSchemaError": InfoSchemaError, "FileNotFoundError": FileNotFoundError,
          "StoreUntrusted": StoreUntrusted}  # fmt: skip


def ensure_store(ann_file: Path, class_names: Sequence[str], trusted: bool) -> tuple[dict, dict, Path, dict]:
    """(columns, meta, path, key) of the info file's store, the columns mapped read-only; built first
    when missing or bad. Raises what reading the info file raises (:class:`.info_schema.InfoSchemaError`),
    :class:`StoreUnwritable` when the store folder cannot be written, :class:`.store_file.StoreUntrusted`
    when another user could have written the folder or the store (see the module doc)."""
    key = store_key(ann_file, class_names, trusted)
    path = store_path(store_folder(), key)
    try:
        check_folder(path.parent)
        return (*open_store(path, key), path, key)
    except (OSError, StoreDamaged):
        pass  # the builder looks again under the lock, and says why it rebuilds (or cannot)
    spec = {"ann_file": str(ann_file), "class_names": list(class_names), "trusted": trusted,
            "path": str(path), "key": key}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "dali_streampetr.frames.store_build", json.dumps(spec)],
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
        raise ERRORS.get(result["error"], RuntimeError)(result["message"])
    if result["rebuilt_because"]:
        logger.warning(f"DALI loader: the frame store {path} {result['rebuilt_because']}: rebuilt it")
    elif result["built"]:
        logger.info(f"DALI loader: wrote the frame store {path} ({result['seconds']:.1f} s)")
    return (*open_store(path, key), path, key)


def load_frames(
    ann_file: str | Path, data_root: str | Path, class_names: Sequence[str], *, trusted_pickle: bool = False
) -> FrameStore:
    """The info file's frames, sorted by timestamp (stable), as upstream does: a sequence of
    :class:`.records.Frame`-like views of the node's frame store (the pickle is read, by the
    restricted unpickler unless ``trusted_pickle``, and validated only when the store is built).
    Raises :class:`InfoSchemaError` for a pickle that is unreadable or malformed."""
    ann_file = Path(ann_file).absolute()
    if not ann_file.is_file():
        raise FileNotFoundError(f"info pickle not found: {ann_file}")
    try:
        columns, meta, path, key = ensure_store(ann_file, class_names, trusted_pickle)
        source = (path, key)
    except StoreUnwritable as exc:
        from .info_columns import read_columns  # only here: a training process never parses the pickle

        logger.warning(f"{exc}; the DALI loader keeps the frames of {ann_file} in its own process")
        columns, meta, _ = read_columns(ann_file, class_names, trusted_pickle=trusted_pickle)
        source = None
    probe = FrameStore(columns, meta, PathResolver(None, None))[0].data_paths[0]
    return FrameStore(columns, meta, path_resolver(Path(data_root), probe), source)
