"""The per-slot streaming sampler, upstream's ``InfiniteGroupEachSampleInBatchSampler``.

One infinite stream of ``torch.randperm(groups_num)`` permutations from a generator seeded once with
the shared seed; global batch slot ``g`` takes the stream elements ``g, g + G, g + 2G, ...`` (``G`` =
batch size x replicas) and walks each group's frames in order. Here the position of every slot is a
pure function of the iteration number, so any batch can be planned directly and resuming only needs
that number.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import torch

from .base import SamplerBase
from .sequences import prev_exists


class _GroupStream:
    """The shared infinite group-order stream (concatenated seeded ``torch.randperm``)."""

    def __init__(self, groups_num: int, seed: int) -> None:
        self._n = groups_num
        self._gen = torch.Generator()
        self._gen.manual_seed(seed)
        self._perms: list[list[int]] = []

    def __getitem__(self, i: int) -> int:
        while len(self._perms) <= i // self._n:
            self._perms.append(torch.randperm(self._n, generator=self._gen).tolist())
        return self._perms[i // self._n][i % self._n]


class _Slot:
    """One global batch slot: its groups are stream elements ``g, g + G, ...``, walked frame by frame."""

    def __init__(self, stream: _GroupStream, global_slot: int, stride: int, groups: list[list[int]]) -> None:
        self._stream, self._first, self._stride, self._groups = stream, global_slot, stride, groups
        self._starts = [0]  # iteration at which the slot's k-th group starts
        self._group_ids: list[int] = []

    def frame_at(self, iteration: int) -> int:
        while self._starts[-1] <= iteration:
            gid = self._stream[self._first + len(self._group_ids) * self._stride]
            self._group_ids.append(gid)
            self._starts.append(self._starts[-1] + len(self._groups[gid]))
        k = bisect.bisect_right(self._starts, iteration) - 1
        return self._groups[self._group_ids[k]][iteration - self._starts[k]]


class StreamSampler(SamplerBase):
    """Frame indices per iteration for this rank's ``batch_size`` slots.

    ``mode='shard'``: slots ``rank*B + j`` of a ``world_size*B`` global batch (upstream, distributed).
    ``mode='replicate'``: every rank samples the whole data set as rank 0 of 1 replica; with
    ``offset_per_rank`` the stream seed becomes ``seed + rank`` so ranks see different orders.

    Users never name ``mode``: the config key ``replicate_dataset_per_gpu`` (and the runner flag of
    the same name) selects it in :class:`~..loader.DaliStreamLoader`. The sampler keeps
    its own word for the two splits because ranks need not be GPUs (gloo on CPU) and because
    ``mode`` is part of the loader's saved ``state_dict``, which resumed runs compare.
    """

    def __init__(
        self, flags: np.ndarray, batch_size: int, *, offset_per_rank: bool = False, **split: Any
    ) -> None:
        """``split``: ``rank``, ``world_size``, ``seed``, ``mode`` (:class:`~.base.SamplerBase`)."""
        super().__init__(flags, batch_size, **split)
        if self.mode == "replicate" and offset_per_rank:
            self.seed += self.rank
        global_batch = batch_size * self.replicas
        if self.groups_num < global_batch:
            remedy = "a smaller batch or a larger seq_split_num"
            if self.mode == "shard":
                remedy = f"fewer GPUs, {remedy}, or replicate_dataset_per_gpu=True"
            raise ValueError(
                f"{self.groups_num} sequence groups cannot feed {global_batch} batch slots "
                f"(samples_per_gpu={batch_size} x {self.replicas} replicas); upstream's "
                "InfiniteGroupEachSampleInBatchSampler asserts groups_num >= samples_per_gpu * num_replicas. "
                f"Use {remedy}."
            )
        groups = [np.flatnonzero(self.flags == g).tolist() for g in range(self.groups_num)]
        stream = _GroupStream(self.groups_num, self.seed)
        self._slots = [
            _Slot(stream, self.sampler_rank * batch_size + j, global_batch, groups) for j in range(batch_size)
        ]
        self._prev = prev_exists(self.flags)

    def batch(self, iteration: int) -> list[int]:
        """Dataset indices of this rank's batch number ``iteration`` (0-based)."""
        return [slot.frame_at(iteration) for slot in self._slots]

    def prev_exists(self, index: int) -> bool:
        return bool(self._prev[index])

    def __len__(self) -> int:
        return len(self.flags)
