"""What both samplers (streaming and epoch-based) share: the frames' group flags, the batch size,
and how this rank splits the data set, checked once.

Sequence groups of the frames (upstream's ``_set_sequence_group_flag``) and ``prev_exists``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

SPLIT_MODES = ("shard", "replicate")


class SamplerBase:
    """Group flags, the batch size, the seed and this rank's split. ``mode='shard'``: the sampler
    runs as ``rank`` of ``world_size`` replicas (upstream's distributed samplers);
    ``mode='replicate'``: every rank samples the whole data set as rank 0 of 1 replica."""

    def __init__(
        self,
        flags: np.ndarray,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        mode: str = "shard",
    ) -> None:
        if mode not in SPLIT_MODES:
            raise ValueError(f"mode must be 'shard' or 'replicate', got {mode!r}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world size {world_size}")
        self.flags = np.asarray(flags, dtype=np.int64)
        self.batch_size, self.rank, self.world_size, self.mode = batch_size, rank, world_size, mode
        self.seed = seed
        self.sampler_rank, self.replicas = (rank, world_size) if mode == "shard" else (0, 1)
        self.group_sizes = np.bincount(self.flags)
        self.groups_num = len(self.group_sizes)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Stored only: the stream never reshuffles per epoch (as upstream's streaming sampler), and
        the epoch-based sampler's epoch is ``iteration // len(self)`` (the runner's calls agree)."""
        self.epoch = epoch


def group_flags(has_sweeps: Sequence[bool], seq_split_num: int | str) -> np.ndarray:
    """Group id per frame: a new sequence at every frame (but the first) with empty ``sweeps``,
    each sequence cut into ``seq_split_num`` consecutive pieces (``'all'``: one group per frame)."""
    flags = np.cumsum([i != 0 and not s for i, s in enumerate(has_sweeps)], dtype=np.int64)
    if seq_split_num == "all":
        return np.arange(len(flags), dtype=np.int64)
    if seq_split_num == 1:
        return flags
    sizes: list[int] = []
    for seq_id, length in enumerate(np.bincount(flags)):
        bounds = [*range(0, length, math.ceil(length / seq_split_num)), length]
        if len(bounds) - 1 != seq_split_num:
            raise ValueError(
                f"sequence {seq_id} has {length} frames and cannot be split into {seq_split_num} pieces "
                f"of ceil({length}/{seq_split_num}) frames (upstream asserts the same); "
                "use a smaller seq_split_num or longer scenes"
            )
        sizes.extend(int(s) for s in np.diff(bounds))
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def prev_exists(flags: np.ndarray) -> np.ndarray:
    """``not (index == 0 or flag[index - 1] != flag[index])`` for every frame."""
    out = np.zeros(len(flags), dtype=bool)
    out[1:] = flags[1:] == flags[:-1]
    return out
