"""The frames of an info file as a few contiguous numpy arrays, and a frame as a view of them.

:func:`to_columns` turns the :class:`.records.Frame` records into columns: fixed-size per-frame
fields as ``(n, ...)`` arrays; the variable-length 3D boxes and per-camera 2D annotations as one
values array each plus offsets; every string (tokens, camera names, data paths) once in one UTF-8
byte array plus offsets, the fields holding indices into it. :class:`FrameStore` is the sequence the
loader reads (``len(frames)``, ``frames[i]``): ``frames[i]`` is a :class:`FrameView` with the
attributes of :class:`.records.Frame`, the same dtypes, shapes and values bit for bit, made on demand
from read-only slices of the columns. No per-frame Python object is kept, so a forked worker that
reads the columns (mapped from a file, :mod:`.store`) never writes to their pages.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

# column name -> (dtype, shape after the leading axis; "C" is the camera count)
FIXED = {
    "timestamp": (np.float64, ()),
    "has_sweeps": (np.bool_, ()),
    "img_timestamps": (np.float64, ("C",)),
    "intrinsics": (np.float64, ("C", 4, 4)),
    "extrinsics": (np.float32, ("C", 4, 4)),
    "ego_pose": (np.float32, (4, 4)),
    "ego_pose_inv": (np.float32, (4, 4)),
}
SHARED = ("intrinsics", "extrinsics")  # per-frame blocks kept once (a calibration serves a whole log)
STRING_FIELDS = ("token", "scene_token", "cam_names", "data_paths")  # per frame: 1, 1, C, C strings
ANN_2D = {"bboxes2d": (np.float32, 4), "centers2d": (np.float32, 2),
          "labels2d": (np.int64, 0), "depths": (np.float32, 0)}  # fmt: skip
KEEPS_EMPTY_SHAPE = ("bboxes2d", "centers2d")  # an empty one keeps the pickle's shape (upstream)
REGULAR = -1  # ``<key>_shape`` value of a camera whose array has the regular (k, cols) shape


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class StringTable:
    """Deduplicating string table being built: ``index(s)`` (in first-seen order) and the final
    values/offsets."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def index(self, text: str | os.PathLike) -> int:
        return self.ids.setdefault(os.fspath(text), len(self.ids))

    def indices(self, texts: Sequence[str]) -> np.ndarray:
        """int32 ``[index(s) for s in texts]`` of strings (not paths)."""
        ids = self.ids
        for text in dict.fromkeys(texts):  # the new ones, in first-seen order
            ids.setdefault(text, len(ids))
        return np.fromiter(map(ids.__getitem__, texts), np.int32, len(texts))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        joined = "".join(self.ids)
        if joined.isascii():  # one byte per character: encode once
            encoded, lengths = joined.encode("ascii"), [len(s) for s in self.ids]
        else:
            parts = [_encode(s) for s in self.ids]
            encoded, lengths = b"".join(parts), [len(b) for b in parts]
        return np.frombuffer(encoded, dtype=np.uint8).copy(), offsets(lengths)


def offsets(counts: Sequence[int]) -> np.ndarray:
    """int64 start offsets of consecutive runs of ``counts`` items, and the total at the end."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def shared_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(table of the distinct blocks, int32 index of each block into it), distinct by their bytes."""
    ids: dict[bytes, int] = {}
    index = np.array([ids.setdefault(b.tobytes(), len(ids)) for b in blocks], dtype=np.int32)
    first = np.unique(index, return_index=True)[1]
    return np.ascontiguousarray(blocks[first]), index


def to_columns(frames: Sequence[Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(columns, meta) of ``frames`` (:class:`.records.Frame` records, all with the same camera count).
    ``meta``: ``n_cams`` and ``empty_shapes`` (the shapes of empty 2D arrays that are not (0, cols))."""
    n, n_cams = len(frames), len(frames[0].cam_names)
    cols: dict[str, np.ndarray] = {}
    for name, (dtype, tail) in FIXED.items():
        shape = (n, *(n_cams if d == "C" else d for d in tail))
        cols[name] = np.array([getattr(f, name) for f in frames], dtype=dtype).reshape(shape)
    for name in SHARED:
        cols[name], cols[f"{name}_index"] = shared_blocks(cols[name])
    strings = StringTable()
    cols["token"] = np.array([strings.index(f.token) for f in frames], dtype=np.int32)
    cols["scene_token"] = np.array([strings.index(f.scene_token) for f in frames], dtype=np.int32)
    for name in ("cam_names", "data_paths"):
        cols[name] = np.array([[strings.index(s) for s in getattr(f, name)] for f in frames], dtype=np.int32)
    cols["string_values"], cols["string_offsets"] = strings.arrays()
    cols["box_offsets"] = offsets([len(f.gt_boxes) for f in frames])
    cols["gt_boxes"] = np.concatenate([f.gt_boxes for f in frames]).astype(np.float32).reshape(-1, 9)
    labeled = [f.gt_labels for f in frames if len(f.gt_labels)]
    cols["gt_labels"] = np.concatenate(labeled).astype(np.int64) if labeled else np.zeros(0, np.int64)
    cols["ann2d_offsets"] = offsets([len(a) if a.size else 0 for f in frames for a in f.labels2d])
    empty_shapes: list[tuple[int, ...]] = []
    for key, (dtype, width) in ANN_2D.items():
        per_cam = [a for f in frames for a in getattr(f, key)]
        filled = [a for a in per_cam if a.size]
        shape = (-1, width) if width else (-1,)
        cols[key] = (np.concatenate(filled) if filled else np.zeros(0, dtype)).astype(dtype).reshape(shape)
        if key in KEEPS_EMPTY_SHAPE:
            ids = np.full(len(per_cam), REGULAR, dtype=np.int16)
            for j, a in enumerate(per_cam):
                if not a.size and a.shape != (0, width):
                    if a.shape not in empty_shapes:
                        empty_shapes.append(a.shape)
                    ids[j] = empty_shapes.index(a.shape)
            cols[f"{key}_shape"] = ids.reshape(n, n_cams)
    return cols, {"n_cams": n_cams, "empty_shapes": [list(s) for s in empty_shapes]}


class PathResolver:
    """``resolver(data_path)`` -> absolute image path, by the rule :func:`path_resolver` picked
    (picklable, so a spawned worker resolves like the loader)."""

    def __init__(self, data_root: Path | None, skip: int | None) -> None:
        self.data_root, self.skip = data_root, skip  # data_root None: the path as is (upstream's rule)

    def __call__(self, path: str) -> str:
        if self.data_root is None:
            return os.path.abspath(path)
        if self.skip is None:
            return str((self.data_root / path).absolute())
        return str(self.data_root.joinpath(*Path(path).parts[self.skip :]).absolute())


def path_resolver(data_root: Path, probe: str) -> PathResolver:
    """Return ``data_path -> absolute path``.

    Upstream opens ``data_path`` relative to the working directory, where the converter wrote
    ``<data_root>/samples/...``. Here the first of these that exists for ``probe`` is used for all
    paths: the path as is (absolute or cwd-relative, upstream's rule), ``data_root/<path>``, then
    ``data_root/<path minus 1, 2, ... leading components>``.
    """
    parts = Path(probe).parts
    if Path(probe).is_absolute() or Path(probe).exists():
        return PathResolver(None, None)
    for skip in range(len(parts)):
        if (data_root.joinpath(*parts[skip:])).exists():
            return PathResolver(data_root, skip)
    return PathResolver(data_root, None)


class FrameStore(Sequence):
    """The frames, read from ``columns`` (as :func:`to_columns` made them, possibly file-mapped):
    ``frames[i]`` is a :class:`FrameView`; a slice gives a list of views."""

    def __init__(
        self,
        columns: Mapping[str, np.ndarray],
        meta: Mapping[str, Any],
        resolve: PathResolver,
        source: tuple[Path, Mapping[str, Any]] | None = None,
    ) -> None:
        self.columns, self.meta, self.resolve, self.source = dict(columns), dict(meta), resolve, source
        self.n_cams = int(meta["n_cams"])
        self.empty_shapes = [tuple(s) for s in meta["empty_shapes"]]
        self._len = len(self.columns["timestamp"])

    def __len__(self) -> int:
        return self._len

    def __reduce__(self):
        """A file-backed store pickles as its file (a spawned worker maps it again), else as data."""
        if self.source is None:
            return (FrameStore, (self.columns, self.meta, self.resolve))
        return (_reopen, (*self.source, self.meta, self.resolve))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [FrameView(self, i) for i in range(*index.indices(self._len))]
        i = int(index)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"frame index {index} out of range for {self._len} frames")
        return FrameView(self, i)

    def __iter__(self) -> Iterator[FrameView]:
        return (FrameView(self, i) for i in range(self._len))

    def string(self, index: int) -> str:
        offsets = self.columns["string_offsets"]
        raw = self.columns["string_values"][offsets[index] : offsets[index + 1]]
        return raw.tobytes().decode("utf-8", "surrogatepass")


def _reopen(path: Path, key: Mapping[str, Any], meta: Mapping[str, Any], resolve: PathResolver) -> FrameStore:
    from .store_file import open_store

    columns, _ = open_store(path, key)
    return FrameStore(columns, meta, resolve, (path, key))


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


class FrameView:
    """One frame of a :class:`FrameStore`, with :class:`.records.Frame`'s attributes (see there), made
    when first read: arrays are read-only views of the store's columns (copies of nothing)."""

    __slots__ = ("_store", "_i", "__dict__")

    def __init__(self, store: FrameStore, i: int) -> None:
        self._store, self._i = store, i

    def __repr__(self) -> str:
        return f"FrameView({self._i}, token={self.token!r})"

    def _fixed(self, name: str) -> np.ndarray:
        row = self._store.columns[f"{name}_index"][self._i] if name in SHARED else self._i
        return _readonly(self._store.columns[name][row])

    def _strings(self, name: str) -> list[str]:
        return [self._store.string(int(j)) for j in self._store.columns[name][self._i]]

    @cached_property
    def token(self) -> str:
        return self._store.string(int(self._store.columns["token"][self._i]))

    @cached_property
    def scene_token(self) -> str:
        return self._store.string(int(self._store.columns["scene_token"][self._i]))

    @cached_property
    def timestamp(self) -> float:
        return float(self._store.columns["timestamp"][self._i])

    @cached_property
    def has_sweeps(self) -> bool:
        return bool(self._store.columns["has_sweeps"][self._i])

    @cached_property
    def cam_names(self) -> list[str]:
        return self._strings("cam_names")

    @cached_property
    def data_paths(self) -> list[str]:
        return self._strings("data_paths")

    @cached_property
    def img_paths(self) -> list[str]:
        return [self._store.resolve(p) for p in self.data_paths]

    @cached_property
    def img_timestamps(self) -> np.ndarray:
        return self._fixed("img_timestamps")

    @cached_property
    def intrinsics(self) -> np.ndarray:
        return self._fixed("intrinsics")

    @cached_property
    def extrinsics(self) -> np.ndarray:
        return self._fixed("extrinsics")

    @cached_property
    def ego_pose(self) -> np.ndarray:
        return self._fixed("ego_pose")

    @cached_property
    def ego_pose_inv(self) -> np.ndarray:
        return self._fixed("ego_pose_inv")

    @cached_property
    def gt_boxes(self) -> np.ndarray:
        a, b = self._store.columns["box_offsets"][self._i : self._i + 2]
        return _readonly(self._store.columns["gt_boxes"][a:b])

    @cached_property
    def gt_labels(self) -> np.ndarray:
        a, b = self._store.columns["box_offsets"][self._i : self._i + 2]
        if a == b:
            return np.array([])  # upstream's np.array([]) of a frame without boxes: float64
        return _readonly(self._store.columns["gt_labels"][a:b])  # one label per box row

    def _per_cam(self, key: str) -> list[np.ndarray]:
        store, n_cams = self._store, self._store.n_cams
        offsets = store.columns["ann2d_offsets"][self._i * n_cams : (self._i + 1) * n_cams + 1]
        values = store.columns[key]
        shapes = store.columns[f"{key}_shape"][self._i] if key in KEEPS_EMPTY_SHAPE else None
        out = []
        for cam in range(n_cams):
            a, b = offsets[cam], offsets[cam + 1]
            if a < b:
                out.append(_readonly(values[a:b]))
            else:  # a new (writable) empty array: upstream passes these through untouched
                regular = shapes is None or shapes[cam] == REGULAR
                shape = values.shape[1:] if regular else store.empty_shapes[shapes[cam]]
                out.append(np.zeros((0, *shape) if regular else shape, dtype=values.dtype))
        return out

    @cached_property
    def bboxes2d(self) -> list[np.ndarray]:
        return self._per_cam("bboxes2d")

    @cached_property
    def labels2d(self) -> list[np.ndarray]:
        return self._per_cam("labels2d")

    @cached_property
    def centers2d(self) -> list[np.ndarray]:
        return self._per_cam("centers2d")

    @cached_property
    def depths(self) -> list[np.ndarray]:
        return self._per_cam("depths")
