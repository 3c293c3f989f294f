"""Upstream's test sampler: the plugin's ``DistributedSampler`` with ``shuffle=False``
(``projects/mmdet3d_plugin/datasets/samplers/distributed_sampler.py``, the configs'
``nonshuffler_sampler``), as a pure function of the iteration.

The index list ``0 .. n-1`` is repeated to ``total_size = ceil(n / replicas) * replicas`` (the
wrap-around padding of torch's ``DistributedSampler`` without ``drop_last``) and rank ``r`` takes
the contiguous chunk ``[r * num_samples, (r + 1) * num_samples)``: the streaming model keeps its
memory across the frames of a scene, so each rank walks whole runs of consecutive frames.
``core/apis/test.py::collect_results_cpu`` concatenates the ranks' parts in rank order and cuts
the result to ``n``: every frame once, in the data set's order. One sample per batch
(``tools/test.py``'s ``samples_per_gpu``); the chunk is walked again for every pass (iteration
``i`` is element ``i % num_samples``), as the DataLoader does on each ``iter()``.
"""

from __future__ import annotations

import math


def chunk_indices(size: int, num_replicas: int, rank: int) -> list[int]:
    """The dataset indices rank ``rank`` of ``num_replicas`` evaluates, in order (upstream's
    ``DistributedSampler.__iter__`` with ``shuffle=False``)."""
    if size < 1:
        raise ValueError("the test set has no frames")
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank {rank} outside world size {num_replicas}")
    num_samples = math.ceil(size / num_replicas)
    total_size = num_samples * num_replicas
    indices = (list(range(size)) * math.ceil(total_size / size))[:total_size]
    return indices[rank * num_samples : (rank + 1) * num_samples]


class NonShuffledSampler:
    """This rank's test frames, one per batch. ``mode`` is always ``'shard'``: upstream's test and
    validation loaders split the set by the real rank, whatever ``replicate_dataset_per_gpu`` says."""

    def __init__(self, size: int, batch_size: int = 1, *, rank: int = 0, world_size: int = 1, **_: object):
        if batch_size != 1:
            raise ValueError(f"the test loader takes one sample per batch, got batch_size={batch_size}")
        self.size, self.batch_size, self.rank, self.world_size = size, batch_size, rank, world_size
        self.sampler_rank, self.replicas, self.mode, self.seed, self.epoch = rank, world_size, "shard", 0, 0
        self.chunk = chunk_indices(size, world_size, rank)

    def batch(self, iteration: int) -> list[int]:
        """Dataset indices of this rank's batch number ``iteration`` (0-based, across passes)."""
        return [self.chunk[iteration % len(self.chunk)]]

    def prev_exists(self, index: int) -> bool:
        """Unused in test mode: the model resets its memory itself where ``scene_token`` changes."""
        return False

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        """Batches per pass (= ``num_samples``, the DataLoader's length over upstream's sampler)."""
        return len(self.chunk)
