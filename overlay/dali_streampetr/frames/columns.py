"""The frames of an info file as a few contiguous numpy arrays, the frame store's columns
(:func:`to_columns`): fixed-size fields as ``(n, ...)`` arrays, variable-length ones and the
deduplicated strings as values plus offsets."""

from __future__ import annotations

import os
from collections.abc import Sequence
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
ANN_2D = {"bboxes2d": (np.float32, 4), "centers2d": (np.float32, 2),
          "labels2d": (np.int64, 0), "depths": (np.float32, 0)}  # fmt: skip
KEEPS_EMPTY_SHAPE = ("bboxes2d", "centers2d")  # an empty one keeps the pickle's shape (upstream)
REGULAR = -1  # ``<key>_shape`` value of a camera whose array has the regular (k, cols) shape


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
            parts = [s.encode("utf-8", "surrogatepass") for s in self.ids]
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
