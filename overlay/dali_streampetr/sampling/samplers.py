"""The samplers: which dataset frames each of this rank's batch slots holds at iteration ``i``, as
pure functions of ``i`` (any batch can be planned directly; a resumed run needs only ``i``).
:class:`StreamSampler` is upstream's ``InfiniteGroupEachSampleInBatchSampler``,
:class:`GroupEpochSampler` its ``DistributedGroupSampler``, :class:`EvalSampler` the test sampler
(one shard of :mod:`.eval_shards` per rank); docs/loader.md ("Training modes") says which config
selects which."""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch


class SamplerBase:
    """Group flags, batch size, seed and this rank's part: ``rank`` of ``world_size`` replicas, or
    (``replicate=True``) rank 0 of 1. A copy (pickle, :func:`copy.deepcopy`) is built afresh from
    :attr:`arguments`: empty caches, generators at their start."""

    def __init__(
        self,
        flags: np.ndarray,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        replicate: bool = False,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world size {world_size}")
        self.arguments: dict[str, Any] = {
            "flags": flags, "batch_size": batch_size, "rank": rank, "world_size": world_size,
            "seed": seed, "replicate": replicate,
        }  # fmt: skip
        self.flags = np.asarray(flags, dtype=np.int64)
        self.batch_size, self.rank, self.world_size, self.replicate = batch_size, rank, world_size, replicate
        self.seed = seed
        self.sampler_rank, self.replicas = (0, 1) if replicate else (rank, world_size)
        self.group_sizes = np.bincount(self.flags)
        self.groups_num = len(self.group_sizes)
        self.epoch = 0

    def __reduce__(self) -> tuple:
        return functools.partial(type(self), **self.arguments), ()

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


# -- streaming


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
    """Frame indices per iteration for this rank's slots ``rank*B + j`` of the global batch;
    replicated with ``offset_per_rank``, the stream seed is ``seed + rank``."""

    def __init__(
        self, flags: np.ndarray, batch_size: int, *, offset_per_rank: bool = False, **placement: Any
    ) -> None:
        super().__init__(flags, batch_size, **placement)
        self.arguments["offset_per_rank"] = offset_per_rank
        if self.replicate and offset_per_rank:
            self.seed += self.rank
        global_batch = batch_size * self.replicas
        if self.groups_num < global_batch:
            remedy = "a smaller batch or a larger seq_split_num"
            if not self.replicate:
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


# -- epoch-based


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
    """Frame indices per iteration for this rank (the interface of :class:`StreamSampler`)."""

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


# -- test


class EvalSampler(SamplerBase):
    """This rank's test frames (its part of ``shards``, by the real rank: never replicated), one per
    batch, in order; iterating yields them as a torch sampler does. A part may be empty."""

    def __init__(
        self, shards: Sequence[Sequence[int]], batch_size: int = 1, *, rank: int = 0, world_size: int = 1
    ) -> None:
        if batch_size != 1:
            raise ValueError(f"the test loader takes one sample per batch, got batch_size={batch_size}")
        super().__init__(np.zeros(0, dtype=np.int64), batch_size, rank=rank, world_size=world_size)
        if len(shards) != world_size:
            raise ValueError(f"{len(shards)} shards for {world_size} ranks")
        self.arguments = {"shards": shards, "batch_size": batch_size, "rank": rank, "world_size": world_size}
        self.shard = [int(i) for i in shards[rank]]

    def batch(self, iteration: int) -> list[int]:
        """Dataset indices of this rank's batch number ``iteration`` (0-based, across passes; each pass
        walks the shard again, as the DataLoader does on each ``iter()``)."""
        return [self.shard[iteration % len(self.shard)]]

    def prev_exists(self, index: int) -> bool:
        """Unused in test mode: the model resets its memory itself where ``scene_token`` changes."""
        return False

    def __iter__(self) -> Iterator[int]:
        return iter(self.shard)

    def __len__(self) -> int:
        """Batches per pass: the shard's frames (upstream's chunk: ``num_samples``, its padding included)."""
        return len(self.shard)


Sampler = StreamSampler | GroupEpochSampler | EvalSampler
