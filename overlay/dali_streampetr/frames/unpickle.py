"""Info pickles loaded without running code from them: every global outside :data:`SAFE_GLOBALS`
(numpy arrays, dtypes and scalars, builtin containers) is refused by name unless
``data_loading_config.trusted_pickle=True``."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .frame_errors import UnsafePickleError

# (module, name) pairs an info pickle may reference: numpy 1.x and 2.x spellings, protocol 0-5.
SAFE_GLOBALS = frozenset(
    {
        *((core, name) for core in ("numpy.core.multiarray", "numpy._core.multiarray") for name in
          ("_reconstruct", "scalar")),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how protocol 0-2 spell bytes
        ("collections", "OrderedDict"),
        *((mod, name) for mod in ("builtins", "__builtin__") for name in
          ("bytes", "bytearray", "set", "frozenset", "complex", "slice", "range", "list", "dict", "tuple",
           "int", "float", "str", "bool")),
    }
)  # fmt: skip


BUFFER = 1 << 20


class RestrictedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that only resolves :data:`SAFE_GLOBALS` (and numpy's dtype classes)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_GLOBALS or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise UnsafePickleError(
            f"refers to the global {module}.{name}, which is neither a numpy array/dtype/scalar nor a "
            "builtin container: loading it could run code. If you trust this file, set "
            "data_loading_config.trusted_pickle=True"
        )


def load_pickle(f: BinaryIO, *, trusted: bool) -> Any:
    """Read one pickle from ``f``: restricted unless ``trusted``."""
    return pickle.load(f) if trusted else RestrictedUnpickler(f).load()


def load_pickle_file(path: Path, *, trusted: bool) -> Any:
    with Path(path).open("rb") as f:
        return load_pickle(f, trusted=trusted)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (as it was after it). Unpickling creates
    only new objects, none of them garbage, so a collection pass over them finds nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_pickle_file(path: Path, *, trusted: bool) -> tuple[Any, str]:
    """(the pickle at ``path``, the SHA-256 of the bytes it was read from): one read of the file,
    hashed on a second thread (hashlib releases the GIL) while :func:`load_pickle` unpickles it,
    the garbage collector paused (:func:`gc_paused`)."""
    raw = Path(path).read_bytes()
    digest = hashlib.sha256()
    hasher = threading.Thread(target=digest.update, args=(raw,), name="info-file-sha256")
    hasher.start()
    try:
        with gc_paused():
            if trusted:
                data = pickle.loads(raw)
            else:  # buffered: the unpickler prefetches through peek() (a bare BytesIO has none)
                data = RestrictedUnpickler(io.BufferedReader(io.BytesIO(raw), BUFFER)).load()
    finally:
        hasher.join()
    return data, digest.hexdigest()
