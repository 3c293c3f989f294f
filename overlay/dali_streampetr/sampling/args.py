"""What the batch planner is built from (in the loader and again in the external source's worker):
the sampler's kind and arguments; outside streaming also the per-frame label and scene facts the
queues need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config.settings import LoaderConfig
from ..frames.records import Frame
from .frame_sets import labelled_frames, scene_ids
from .sequences import group_flags


def sampler_args(
    cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
) -> dict[str, Any]:
    """What the planner is rebuilt from (in the external source's worker too): the sampler's kind and
    arguments; outside streaming also the per-frame label and scene facts the queues need."""
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
