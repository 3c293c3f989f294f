"""What both samplers (streaming and epoch-based) share: the frames' group flags, the batch size,
and how this rank splits the data set, checked once."""

from __future__ import annotations

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
