"""Upstream's ``DistributedGroupSampler`` (the single-frame and sliding-window configs), as a pure
function of the iteration: the batches of epoch ``e`` are upstream's ``__iter__`` after
``set_epoch(e)``, cut into ``samples_per_gpu`` blocks; iteration ``i`` is block ``i % L`` of epoch
``i // L`` (``L`` = batches per epoch), so a resumed run needs only its iteration.

Per epoch (upstream's ``__iter__``): one ``torch.Generator`` seeded ``epoch + seed``; per group a
``torch.randperm`` of its frames, padded by repetition to a multiple of ``samples_per_gpu *
num_replicas``; then a ``torch.randperm`` of the ``samples_per_gpu`` blocks; rank ``r`` takes the
``r``-th contiguous ``num_samples`` of them. The seed is used as given (no broadcast), as upstream.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import torch

from .base import SamplerBase


def epoch_indices(
    flags: np.ndarray, samples_per_gpu: int, num_replicas: int, rank: int, seed: int, epoch: int
) -> list[int]:
    """This rank's frame indices of one epoch, in upstream's order (``DistributedGroupSampler``)."""
    flags = np.asarray(flags, dtype=np.int64)
    sizes = np.bincount(flags)
    num_samples = sum(math.ceil(s / samples_per_gpu / num_replicas) * samples_per_gpu for s in sizes)
    g = torch.Generator()
    g.manual_seed(epoch + seed)
    indices: list[int] = []
    for i, size in enumerate(sizes):
        if size == 0:
            continue
        members = np.where(flags == i)[0]
        group = members[list(torch.randperm(int(size), generator=g).numpy())].tolist()
        extra = math.ceil(size / samples_per_gpu / num_replicas) * samples_per_gpu * num_replicas - len(group)
        tmp = group.copy()
        for _ in range(extra // size):
            group.extend(tmp)
        group.extend(tmp[: extra % size])
        indices.extend(group)
    blocks = torch.randperm(len(indices) // samples_per_gpu, generator=g).tolist()
    indices = [indices[j] for b in blocks for j in range(b * samples_per_gpu, (b + 1) * samples_per_gpu)]
    return indices[num_samples * rank : num_samples * (rank + 1)]


class GroupEpochSampler(SamplerBase):
    """Frame indices per iteration for this rank (same interface as
    :class:`~.stream.StreamSampler`). ``mode='replicate'``: every rank samples the
    whole data set as rank 0 of 1 replica (upstream's order, identical on every rank)."""

    _cached: tuple[int, list[int]] | None = None  # (epoch, this rank's order of it)

    @cached_property
    def num_samples(self) -> int:
        """This rank's frames per epoch (upstream's ``num_samples``: every group padded)."""
        per_rank = (math.ceil(s / self.batch_size / self.replicas) for s in self.group_sizes)
        return sum(n * self.batch_size for n in per_rank)

    @cached_property
    def batches_per_epoch(self) -> int:
        return self.num_samples // self.batch_size

    def indices(self, epoch: int) -> list[int]:
        """This rank's frames of ``epoch`` (upstream's sampler after ``set_epoch(epoch)``)."""
        if self._cached is None or self._cached[0] != epoch:
            order = epoch_indices(
                self.flags, self.batch_size, self.replicas, self.sampler_rank, self.seed, epoch
            )
            self._cached = (epoch, order)
        return self._cached[1]

    def batch(self, iteration: int) -> list[int]:
        """Dataset indices of this rank's batch number ``iteration`` (0-based, across epochs)."""
        epoch, pos = divmod(iteration, self.batches_per_epoch)
        return self.indices(epoch)[pos * self.batch_size : (pos + 1) * self.batch_size]

    def prev_exists(self, index: int) -> bool:
        """A sample's first frame never has a predecessor (upstream sets it by scene within the queue)."""
        return False

    def __len__(self) -> int:
        """Batches per epoch (the DataLoader's length over this sampler)."""
        return self.batches_per_epoch
