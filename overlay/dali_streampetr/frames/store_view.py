"""The frame store as the loader reads it: a sequence of frames, each a view of the columns.

:class:`FrameStore` is the sequence the loader reads (``len(frames)``, ``frames[i]``): ``frames[i]``
is a :class:`FrameView` with the attributes of :class:`.records.Frame`, the same dtypes, shapes and
values bit for bit, made on demand from read-only slices of the columns (:mod:`.columns`). No
per-frame Python object is kept, so a forked worker that reads the columns (mapped from a file,
:mod:`.store`) never writes to their pages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .columns import KEEPS_EMPTY_SHAPE, REGULAR, SHARED
from .image_paths import PathResolver


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
