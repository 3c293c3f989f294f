"""Group flags, prev_exists and the streaming sampler against a small model of upstream's sampler."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from dali_streampetr.sampling.samplers import StreamSampler, group_flags, prev_exists


def upstream_flags(has_sweeps: list[bool], split: int) -> np.ndarray:
    """CustomNuScenesDataset._set_sequence_group_flag, restated."""
    seq, flags = 0, []
    for i, s in enumerate(has_sweeps):
        if i != 0 and not s:
            seq += 1
        flags.append(seq)
    flags = np.array(flags)
    new, cur = [], 0
    for n in np.bincount(flags):
        cuts = np.array(list(range(0, n, math.ceil(n / split))) + [n])
        for size in cuts[1:] - cuts[:-1]:
            new += [cur] * size
            cur += 1
    return np.array(new)


class UpstreamSampler:
    """InfiniteGroupEachSampleInBatchSampler, restated (buffers + islice over one seeded stream)."""

    def __init__(self, flags, batch_size, num_replicas, rank, seed):
        self.groups = {g: np.where(flags == g)[0].tolist() for g in range(len(np.bincount(flags)))}
        self.n = len(self.groups)
        assert self.n >= batch_size * num_replicas
        g_total = batch_size * num_replicas
        self.streams = [
            itertools.islice(self._infinite(seed), rank * batch_size + j, None, g_total)
            for j in range(batch_size)
        ]
        self.buffers = [[] for _ in range(batch_size)]

    def _infinite(self, seed):
        g = torch.Generator()
        g.manual_seed(seed)
        while True:
            yield from torch.randperm(self.n, generator=g).tolist()

    def __iter__(self):
        while True:
            batch = []
            for j, buf in enumerate(self.buffers):
                if not buf:
                    self.buffers[j] = buf = copy.deepcopy(self.groups[next(self.streams[j])])
                batch.append(buf.pop(0))
            yield batch


@pytest.fixture
def has_sweeps() -> list[bool]:
    rng = np.random.default_rng(3)
    lengths = rng.integers(5, 12, size=16)
    return [i != 0 for n in lengths for i in range(n)]


def test_group_flags_match_upstream(has_sweeps):
    for split in (1, 2, 3):
        np.testing.assert_array_equal(group_flags(has_sweeps, split), upstream_flags(has_sweeps, split))
    assert group_flags(has_sweeps, "all").tolist() == list(range(len(has_sweeps)))


def test_group_flags_unsplittable_sequence_names_the_numbers():
    with pytest.raises(ValueError, match="sequence 1 has 4 frames and cannot be split into 3"):
        group_flags([False, True, True, True, True, False, True, True, True], 3)


def test_prev_exists_false_exactly_at_group_starts():
    flags = np.array([0, 0, 1, 1, 1, 2])
    assert prev_exists(flags).tolist() == [False, True, False, True, True, False]


@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("replicate", [False, True], ids=["shard", "replicate"])
def test_stream_matches_upstream_model(has_sweeps, world_size, replicate):
    flags = group_flags(has_sweeps, 2)
    batch, iters, seed = 2, 60, 7
    for rank in range(world_size):
        ours = StreamSampler(flags, batch, rank=rank, world_size=world_size, seed=seed, replicate=replicate)
        up_rank, up_world = (0, 1) if replicate else (rank, world_size)
        model = iter(UpstreamSampler(flags, batch, up_world, up_rank, seed))
        expected = [next(model) for _ in range(iters)]
        assert [ours.batch(i) for i in range(iters)] == expected
        prev = [[ours.prev_exists(i) for i in b] for b in expected]
        assert prev == [[bool(i > 0 and flags[i - 1] == flags[i]) for i in b] for b in expected]


def test_shards_take_disjoint_groups(has_sweeps):
    flags = group_flags(has_sweeps, 2)
    samplers = [StreamSampler(flags, 2, rank=r, world_size=4, seed=1) for r in range(4)]
    first_groups = [flags[i] for s in samplers for i in s.batch(0)]
    assert len(set(first_groups)) == 8


def test_random_access_equals_sequential(has_sweeps):
    flags = group_flags(has_sweeps, 2)
    a = StreamSampler(flags, 3, seed=5)
    b = StreamSampler(flags, 3, seed=5)
    sequential = [a.batch(i) for i in range(80)]
    assert [b.batch(i) for i in reversed(range(80))][::-1] == sequential


def test_replicate_offset_per_rank_changes_the_order(has_sweeps):
    flags = group_flags(has_sweeps, 2)
    same = [StreamSampler(flags, 2, rank=r, world_size=2, replicate=True).batch(5) for r in range(2)]
    assert same[0] == same[1]
    offset = [
        StreamSampler(flags, 2, rank=r, world_size=2, replicate=True, offset_per_rank=True) for r in range(2)
    ]
    assert [offset[0].batch(i) for i in range(20)] != [offset[1].batch(i) for i in range(20)]
    assert offset[1].seed == 1


def test_too_many_slots_is_a_clear_error():
    flags = np.repeat(np.arange(6), 3)
    with pytest.raises(ValueError, match=r"6 sequence groups cannot feed 8 batch slots .*2 x 4 replicas"):
        StreamSampler(flags, 2, rank=0, world_size=4)
    StreamSampler(flags, 2, rank=3, world_size=4, replicate=True)  # replicate needs only 2
    with pytest.raises(
        ValueError, match=r"cannot feed 8 batch slots .*Use a smaller batch or a larger seq_split_num\.$"
    ):
        StreamSampler(flags, 8, rank=3, world_size=4, replicate=True)  # no GPU count helps here
