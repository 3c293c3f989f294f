"""Whole-set per-frame facts the training modes need, computed once when the loader is built (only
``len(frames)`` and ``frames[i].<attr>`` are used; a :class:`..frames.columns.FrameStore` is read
column-wise, in one pass over its arrays)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..batch.transforms import filter_objects
from ..frames.columns import FrameStore
from ..frames.records import Frame


def labelled_frames(
    frames: Sequence[Frame], point_cloud_range: tuple[float, ...], num_classes: int
) -> np.ndarray:
    """Per frame: whether a 3D box is left after ObjectRangeFilter and ObjectNameFilter, i.e.
    upstream's ``filter_empty_gt`` test ``(gt_labels_3d != -1).any()`` on the pipeline's output."""
    if isinstance(frames, FrameStore):
        return _labelled_columns(frames, point_cloud_range, num_classes)
    out = np.zeros(len(frames), dtype=bool)
    for i in range(len(frames)):
        frame = frames[i]
        _, labels = filter_objects(frame.gt_boxes, frame.gt_labels, point_cloud_range, num_classes)
        out[i] = len(labels) > 0
    return out


def _labelled_columns(
    store: FrameStore, point_cloud_range: tuple[float, ...], num_classes: int
) -> np.ndarray:
    """:func:`labelled_frames` over all boxes at once: the tests of :func:`..batch.transforms.filter_objects`
    (BEV centre strictly inside the float32 range, label in 0..num_classes-1; the yaw is irrelevant)."""
    boxes, labels = store.columns["gt_boxes"], store.columns["gt_labels"]
    x0, y0, _, x1, y1, _ = np.asarray(point_cloud_range, dtype=np.float32)
    x, y = boxes[:, 0], boxes[:, 1]
    keep = (x > x0) & (y > y0) & (x < x1) & (y < y1) & (labels >= 0) & (labels < num_classes)
    kept_before = np.concatenate([[0], np.cumsum(keep)])[store.columns["box_offsets"]]
    return kept_before[1:] > kept_before[:-1]


def scene_ids(frames: Sequence[Frame]) -> np.ndarray:
    """Per frame: a small integer per distinct ``scene_token`` (equal ids = same scene), numbered in
    the order the scenes first appear."""
    if isinstance(frames, FrameStore):  # equal tokens have one index into the store's string table
        _, first, inverse = np.unique(frames.columns["scene_token"], return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))
        return rank[inverse.reshape(-1)]
    ids: dict[str, int] = {}
    return np.array(
        [ids.setdefault(frames[i].scene_token, len(ids)) for i in range(len(frames))], dtype=np.int64
    )
