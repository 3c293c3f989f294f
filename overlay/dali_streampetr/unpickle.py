"""Info pickles loaded without running code from them.

A pickle is a program: ``pickle.load`` (and mmcv's ``mmcv.load``) calls whatever global the file
names. StreamPETR's info files only need numpy arrays, dtypes and scalars plus builtin containers,
so every other global is refused by name unless ``data_loading_config.trusted_pickle=True``.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, BinaryIO

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


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle references a global outside :data:`SAFE_GLOBALS`."""


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
