"""One file of named numpy arrays, written atomically and mapped read-only, trusted only once checked.

Layout: ``MAGIC``, the header length (8 bytes, little endian), the SHA-256 (32 bytes) of the length
and of everything after the digest, a JSON header (the caller's ``key`` and ``meta``, every array's
dtype, shape and offset, the data size), zero padding to ``ALIGN``, then the arrays, each starting
on an ``ALIGN`` boundary: the digest covers every byte that decides what is read.
:func:`write_store` writes it with the package's one writer (:mod:`..atomic_file`): a reader sees
the old file, the new one or none, never a part.

:func:`open_store` checks owner and mode, magic, header, key, layout, size and digest before it maps
anything: a file that fails is :class:`StoreDamaged`. A folder or file another user could have
written is :class:`StoreUntrusted`, unless ``$STREAMPETR_DALI_FRAME_STORES_SHARED=1`` declares the
folder shared (then every user who can write there is trusted).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..atomic_file import replace_file
from .frame_errors import StoreDamaged, StoreUntrusted

MAGIC = b"SPDALI-FRAMES-2\n"
ALIGN = 4096
CHUNK = 1 << 22
MAX_HEADER = 1 << 24
DIGEST = 32
PREFIX = len(MAGIC) + 8 + DIGEST
DTYPE_KINDS = frozenset("biuf")  # bool, integers, floats: plain bytes, no objects, no pointers
MAX_NDIM = 8
SHARED_ENV = "STREAMPETR_DALI_FRAME_STORES_SHARED"
HEADER_FIELDS = frozenset({"key", "meta", "arrays", "data_bytes"})
ENTRY_FIELDS = frozenset({"dtype", "shape", "offset"})


def check_owner(st: os.stat_result, what: str, path: Path) -> None:
    """:class:`StoreUntrusted` when ``st`` (of ``path``) belongs to another user or is writable by
    group or others, unless ``$STREAMPETR_DALI_FRAME_STORES_SHARED`` declares the folder shared."""
    if os.environ.get(SHARED_ENV, "").strip().lower() in ("1", "true", "yes"):
        return
    problems = [
        f"is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
        if st.st_uid != os.geteuid()
        else "",
        f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})" if st.st_mode & 0o022 else "",
    ]
    if why := " and ".join(p for p in problems if p):
        raise StoreUntrusted(
            f"the frame store {what} {path} {why}: another user could have written its frames. Use a "
            f"folder of your own ($STREAMPETR_DALI_FRAME_STORES), `chmod go-w` it, or, if you trust "
            f"every user who can write there, declare it shared with {SHARED_ENV}=1"
        )


def check_folder(folder: Path) -> None:
    """:func:`check_owner` of the store folder itself (``FileNotFoundError`` when there is none)."""
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        st = os.stat(folder)  # a link to a folder: the folder it names decides
    if not stat.S_ISDIR(st.st_mode):
        raise StoreUntrusted(f"the frame store folder {folder} is not a folder")
    check_owner(st, "folder", folder)


def open_private(path: Path, flags: int, what: str) -> int:
    """A descriptor of ``path`` opened ``flags | O_NOFOLLOW`` (create it with ``O_CREAT | O_EXCL``
    in ``flags``): a symbolic link there is :class:`StoreUntrusted`, its target untouched."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise StoreUntrusted(
            f"the frame store's {what} {path} exists already: refusing to write through it"
        ) from None
    except OSError:
        if os.path.islink(path):
            raise StoreUntrusted(f"the frame store's {what} {path} is a symbolic link: refusing it") from None
        raise


def _layout(arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], int]:
    entries, offset = {}, 0
    for name, arr in arrays.items():
        entries[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
        offset += -(-arr.nbytes // ALIGN) * ALIGN
    return entries, offset


def write_store(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    key: Mapping[str, Any],
    meta: Mapping[str, Any],
    checkpoint: Callable[[str], None] = lambda step: None,
) -> None:
    """Write ``arrays`` to ``path`` (atomically, the package's ``replace_file``). ``checkpoint(step)`` is
    called after each step that writes (the fault-injection points of the tests)."""
    for name, arr in arrays.items():
        _allowed_dtype(arr.dtype.str, name)
    entries, size = _layout(arrays)
    header = json.dumps(
        {"key": dict(key), "meta": dict(meta), "arrays": entries, "data_bytes": size}, sort_keys=True
    ).encode()
    covered = len(header).to_bytes(8, "little") + header
    covered += b"\0" * (_data_start(len(header)) - PREFIX - len(header))
    digest = hashlib.sha256(covered)

    def write(f: BinaryIO) -> None:
        f.seek(PREFIX + len(covered) - 8)
        for name, arr in arrays.items():
            data = np.ascontiguousarray(arr).tobytes()
            data += b"\0" * (-len(data) % ALIGN)
            digest.update(data)
            f.write(data)
            checkpoint(f"frame-store:{name}")
        f.seek(0)
        f.write(MAGIC + covered[:8] + digest.digest() + covered[8:])

    try:
        replace_file(path, write, checkpoint=lambda step: checkpoint(f"frame-store:{step}"))
    except FileExistsError as exc:  # its temporary file's name is taken: a planted link, say
        raise StoreUntrusted(
            f"the frame store's temporary file {exc.filename} exists already: refusing to write through it"
        ) from None


def _data_start(header_len: int) -> int:
    return -(-(PREFIX + header_len) // ALIGN) * ALIGN


def _allowed_dtype(spelling: Any, name: str) -> np.dtype:
    if not isinstance(spelling, str):
        raise StoreDamaged(f"has a damaged header (array {name!r}: dtype {spelling!r} is not a dtype string)")
    try:
        dtype = np.dtype(spelling)
    except TypeError:
        dtype = None
    if (
        dtype is None
        or dtype.kind not in DTYPE_KINDS
        or dtype.fields
        or dtype.subdtype
        or dtype.str != spelling
    ):
        raise StoreDamaged(
            f"has a damaged header (array {name!r}: dtype {spelling!r} is not one of the plain numeric "
            f"kinds {''.join(sorted(DTYPE_KINDS))})"
        )
    return dtype


def _index(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _views(header: Mapping[str, Any]) -> list[tuple[str, np.dtype, tuple[int, ...], int, int]]:
    """(name, dtype, shape, offset, nbytes) of every array, checked against the data size."""

    def damaged(why: str) -> StoreDamaged:
        return StoreDamaged(f"has a damaged header ({why})")

    if set(header) != HEADER_FIELDS:
        raise damaged(f"fields {sorted(header)}, expected {sorted(HEADER_FIELDS)}")
    if not (isinstance(header["key"], dict) and isinstance(header["meta"], dict)):
        raise damaged("key and meta are not objects")
    size, entries = _index(header["data_bytes"]), header["arrays"]
    if size is None or not isinstance(entries, dict):
        raise damaged("no data size or array table")
    views = []
    for name, entry in entries.items():
        if not isinstance(entry, dict) or set(entry) != ENTRY_FIELDS:
            raise damaged(f"array {name!r}: expected the fields {sorted(ENTRY_FIELDS)}")
        dtype, shape, offset = _allowed_dtype(entry["dtype"], name), entry["shape"], _index(entry["offset"])
        if not isinstance(shape, list) or len(shape) > MAX_NDIM or any(_index(n) is None for n in shape):
            raise damaged(f"array {name!r}: shape {shape!r} is not a list of sizes")
        nbytes = dtype.itemsize * math.prod(shape)
        if offset is None or offset % ALIGN or offset + nbytes > size:
            raise damaged(f"array {name!r}: {nbytes} bytes at offset {entry['offset']!r} are not inside the "
                          f"{size} data bytes on an {ALIGN}-byte boundary")  # fmt: skip
        views.append((name, dtype, tuple(shape), offset, nbytes))
    end = 0
    for name, _, _, offset, nbytes in sorted(
        (v for v in views if v[4]), key=lambda v: v[3]
    ):  # an empty array overlaps none
        if offset < end:
            raise damaged(f"array {name!r} at offset {offset} overlaps the array before it")
        end = offset + nbytes
    return views


def _read_checked(f: Any, path: Path, key: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """(header, data offset) of the open store ``f`` once its key, layout, size and digest check."""
    head = f.read(PREFIX)
    if len(head) < PREFIX or not head.startswith(MAGIC):
        raise StoreDamaged("is not a frame store of this format (no header)")
    length, expected = int.from_bytes(head[len(MAGIC) : len(MAGIC) + 8], "little"), head[-DIGEST:]
    if length > MAX_HEADER:
        raise StoreDamaged(f"has a damaged header (its length {length} is over {MAX_HEADER})")
    raw = f.read(length)
    try:
        if len(raw) != length:
            raise ValueError("header cut short")
        header = json.loads(raw)
        if not isinstance(header, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise StoreDamaged(f"has a damaged header ({exc})") from None
    views = _views(header)
    start = _data_start(length)
    size, want = os.fstat(f.fileno()).st_size, start + header["data_bytes"]
    if size != want:
        raise StoreDamaged(f"is truncated or padded ({size} bytes, its header says {want})")
    digest = hashlib.sha256(head[len(MAGIC) : len(MAGIC) + 8] + raw)
    f.seek(PREFIX + length)
    while chunk := f.read(CHUNK):
        digest.update(chunk)
    if digest.digest() != expected:
        raise StoreDamaged("does not match its checksum (corrupt header or data)")
    if header["key"] != dict(key):
        raise StoreDamaged("was written for another key (info file, classes or loader version)")
    header["views"] = views
    return header, start


def open_store(path: Path, key: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(arrays, meta) of the store at ``path``, the arrays read-only views of one shared read-only
    mapping of the file. ``FileNotFoundError`` when there is none; :class:`StoreUntrusted` when
    another user could have written it; :class:`StoreDamaged` when it fails a check (see the module
    doc) or cannot be read or viewed for any other reason."""
    try:
        fd = open_private(Path(path), os.O_RDONLY, "file")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StoreDamaged(f"cannot be opened ({exc})") from None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StoreDamaged("is not a regular file")
            check_owner(os.fstat(fd), "file", path)
            header, start = _read_checked(f, path, key)
            data = np.memmap(f, dtype=np.uint8, mode="r").view(np.ndarray)  # the file checked above
            arrays = {}
            for name, dtype, shape, offset, nbytes in header["views"]:
                first = start + offset
                arrays[name] = data[first : first + nbytes].view(dtype).reshape(shape)
    except (StoreDamaged, StoreUntrusted):
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure to read or view it: not trusted
        raise StoreDamaged(f"cannot be read ({type(exc).__name__}: {exc})") from None
    return arrays, header["meta"]
