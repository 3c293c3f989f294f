"""Whole-set per-frame facts the training modes need, computed once when the loader is built (only
``len(frames)`` and ``frames[i].<attr>`` are used)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .geometry import filter_objects
from .infos import Frame


def labelled_frames(
    frames: Sequence[Frame], point_cloud_range: tuple[float, ...], num_classes: int
) -> np.ndarray:
    """Per frame: whether a 3D box is left after ObjectRangeFilter and ObjectNameFilter, i.e.
    upstream's ``filter_empty_gt`` test ``(gt_labels_3d != -1).any()`` on the pipeline's output."""
    out = np.zeros(len(frames), dtype=bool)
    for i in range(len(frames)):
        frame = frames[i]
        _, labels = filter_objects(frame.gt_boxes, frame.gt_labels, point_cloud_range, num_classes)
        out[i] = len(labels) > 0
    return out


def scene_ids(frames: Sequence[Frame]) -> np.ndarray:
    """Per frame: a small integer per distinct ``scene_token`` (equal ids = same scene)."""
    ids: dict[str, int] = {}
    return np.array(
        [ids.setdefault(frames[i].scene_token, len(ids)) for i in range(len(frames))], dtype=np.int64
    )
