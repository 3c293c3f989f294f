"""What the batch planner is built from (in the loader and again in the external source's worker):
the sampler's kind and arguments; outside streaming also the per-frame label and scene facts the
queues need.

Whole-set per-frame facts the training modes need, computed once when the loader is built (only
``len(frames)`` and ``frames[i].<attr>`` are used; a :class:`..frames.store_view.FrameStore` is read
column-wise, in one pass over its arrays).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..batch.transforms import filter_objects
from ..config.modes import TEST
from ..config.settings import LoaderConfig
from ..frames.records import Frame
from ..frames.store_view import FrameStore
from .base import group_flags


def sampler_args(
    cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
) -> dict[str, Any]:
    """What the planner is rebuilt from (in the external source's worker too): the sampler's kind and
    arguments; in the epoch-based training modes also the per-frame label and scene facts the queues
    need; in test mode the set's size (:mod:`.nonshuffled`)."""
    if cfg.mode.name == TEST:  # upstream's test sampler: sharded by the real rank, never replicated
        return {"kind": "test", "size": len(frames), "batch_size": cfg.samples_per_gpu,
                "rank": rank, "world_size": world_size}  # fmt: skip
    split = "replicate" if cfg.replicate_dataset_per_gpu else "shard"
    common = {
        "batch_size": cfg.samples_per_gpu,
        "rank": rank,
        "world_size": world_size,
        "seed": seed,
        "mode": split,
    }
    if not cfg.mode.epoch_based:
        flags = group_flags([frames[i].has_sweeps for i in range(len(frames))], cfg.seq_split_num)
        return {"kind": "stream", "flags": flags, **common, "offset_per_rank": cfg.offset_order_per_rank}
    labelled = labelled_frames(frames, cfg.point_cloud_range, len(cfg.class_names))
    if cfg.mode.filter_empty_gt and not labelled.any():
        raise ValueError(
            "data.train.filter_empty_gt=True but no frame of the info file has a label left after the "
            "range and class filters: upstream's __getitem__ would draw replacements forever; set "
            "filter_empty_gt=False"
        )
    flags = np.zeros(len(frames), dtype=np.int64)  # Custom3DDataset's flag outside seq_mode: all zero
    return {"kind": "epoch", "flags": flags, **common, "labelled": labelled, "scenes": scene_ids(frames)}


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
