"""One file of named numpy arrays, written atomically and mapped read-only.

Layout: ``MAGIC``, the header length (8 bytes, little endian), a JSON header (the caller's ``key``
and ``meta``, every array's dtype, shape and offset, the data size and its SHA-256), zero padding to
``ALIGN``, then the arrays, each starting on an ``ALIGN`` boundary. :func:`write_store` writes it
with :func:`write_atomic`, the package's one atomic writer: a reader sees the old file, the new one
or none, never a part. :func:`open_store` checks magic,
header, key, size and checksum before it maps anything: a file that fails is :class:`StoreDamaged`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

MAGIC = b"SPDALI-FRAMES\n"
ALIGN = 4096
CHUNK = 1 << 22


class StoreDamaged(ValueError):
    """A store file that cannot be trusted (truncated, corrupt, or written for another key)."""


def _layout(arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], int]:
    entries, offset = {}, 0
    for name, arr in arrays.items():
        entries[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
        offset += -(-arr.nbytes // ALIGN) * ALIGN
    return entries, offset


def write_atomic(
    path: Path, write: Callable[[BinaryIO], None], checkpoint: Callable[[str], None] = lambda step: None
) -> None:
    """``write(f)`` into a temporary file in ``path``'s folder, fsync it, rename it over ``path`` and
    fsync the folder (``checkpoint("written")`` before the rename, ``("published")`` after).

    The tooling has its own writer (``scripts/overlaytool/files.py``): this package is copied into
    the upstream checkout without the tooling and must import in training processes that lack it."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        checkpoint("written")
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        checkpoint("published")
    finally:
        tmp.unlink(missing_ok=True)


def write_store(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    key: Mapping[str, Any],
    meta: Mapping[str, Any],
    checkpoint: Callable[[str], None] = lambda step: None,
) -> None:
    """Write ``arrays`` to ``path`` (atomically, see the module doc). ``checkpoint(step)`` is called
    after each step that writes (the fault-injection points of the tests)."""
    entries, size = _layout(arrays)
    fields = {"key": dict(key), "meta": dict(meta), "arrays": entries, "data_bytes": size}
    start = _data_start(len(_header_bytes(fields, "0" * 64)))  # the checksum has a fixed length
    digest = hashlib.sha256()

    def write(f: BinaryIO) -> None:
        f.seek(start)
        for name, arr in arrays.items():
            data = np.ascontiguousarray(arr).tobytes()
            data += b"\0" * (-len(data) % ALIGN)
            digest.update(data)
            f.write(data)
            checkpoint(f"frame-store:{name}")
        f.seek(0)
        f.write(_header_bytes(fields, digest.hexdigest()))

    write_atomic(path, write, lambda step: checkpoint(f"frame-store:{step}"))


def _header_bytes(fields: Mapping[str, Any], sha256: str) -> bytes:
    header = json.dumps({**fields, "sha256": sha256}, sort_keys=True).encode()
    return MAGIC + len(header).to_bytes(8, "little") + header


def _data_start(head_len: int) -> int:
    return -(-head_len // ALIGN) * ALIGN


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, offset of the data) of the store at ``path``; :class:`StoreDamaged` when unreadable."""
    prefix = len(MAGIC) + 8
    with path.open("rb") as f:
        head = f.read(prefix)
        if len(head) < prefix or not head.startswith(MAGIC):
            raise StoreDamaged("is not a frame store (no header)")
        length = int.from_bytes(head[len(MAGIC) :], "little")
        raw = f.read(min(length, 1 << 24))
    try:
        if len(raw) != length:
            raise ValueError("header cut short")
        header = json.loads(raw)
        _ = header["key"], header["meta"], header["arrays"], header["data_bytes"], header["sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreDamaged(f"has a damaged header ({exc})") from None
    return header, _data_start(prefix + length)


def open_store(path: Path, key: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(arrays, meta) of the store at ``path``, the arrays read-only views of one shared read-only
    mapping of the file. ``FileNotFoundError`` when there is none; :class:`StoreDamaged` when its
    key is not ``key``, or it is truncated or its data does not match its checksum."""
    header, start = read_header(path)
    if header["key"] != dict(key):
        raise StoreDamaged("was written for another key (info file, classes or loader version)")
    size, expected = path.stat().st_size, start + header["data_bytes"]
    if size != expected:
        raise StoreDamaged(f"is truncated or padded ({size} bytes, its header says {expected})")
    digest = hashlib.sha256()
    with path.open("rb") as f:
        f.seek(start)
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != header["sha256"]:
        raise StoreDamaged("does not match its checksum (corrupt data)")
    data = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
    arrays = {}
    for name, entry in header["arrays"].items():
        dtype, shape = np.dtype(entry["dtype"]), tuple(entry["shape"])
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        first = start + entry["offset"]
        arrays[name] = data[first : first + nbytes].view(dtype).reshape(shape)
    return arrays, header["meta"]
