"""Scene-whole test shards and the gather (``dali_streampetr.sampling.eval_shards``): every frame in
exactly one rank, in dataset order, whole scenes, the balance bound (at most the ideal share plus one
of the rank's own scenes), each cut at the scene boundary nearest to the ideal one; upstream's chunks
against upstream's sampler, transcribed; the gather in dataset order for both
shardings, empty ranks and one rank, and its errors by name. The same shards and the same predictions
through tools/test.py on 1 to 4 gloo ranks: tests/upstream/test_eval_shards_stack.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dali_streampetr.sampling.eval_shards import (
    frames_without_memory,
    in_dataset_order,
    part_line,
    scene_shards,
    scene_starts,
    sharding_of,
    upstream_chunks,
)
from dali_streampetr.settings import ConfigValueError
from hypothesis import given, settings
from hypothesis import strategies as st

scene_lengths = st.lists(st.integers(1, 60), max_size=40)
world_sizes = st.integers(1, 48)


def scene_ids(lengths: list[int]) -> list[str]:
    return [f"scene-{s}" for s, n in enumerate(lengths) for _ in range(n)]


def shard_problems(shards: list[list[int]] | list[range], lengths: list[int], world_size: int) -> list[str]:
    """What is wrong with ``shards`` as scene-whole shards of scenes of ``lengths`` on ``world_size``
    ranks: a count of ranks, a frame missing, twice or out of order, a cut inside a scene, a rank above
    the ideal share plus the longer of its first and last scene."""
    n = sum(lengths)
    starts = set(np.cumsum([0, *lengths]).tolist())
    problems = []
    if len(shards) != world_size:
        problems.append(f"{len(shards)} shards for {world_size} ranks")
    frames = [i for shard in shards for i in shard]
    if frames != list(range(n)):
        problems.append(f"the shards are not frames 0..{n - 1} once each in order: {frames}")
    for rank, shard in enumerate(shards):
        if not shard:
            continue
        if shard[0] not in starts or shard[-1] + 1 not in starts:
            problems.append(f"rank {rank} ({shard[0]}..{shard[-1]}) cuts a scene")
            continue
        ends = sorted(starts)
        first = ends[ends.index(shard[0]) + 1] - shard[0]
        last = shard[-1] + 1 - ends[ends.index(shard[-1] + 1) - 1]
        if Fraction(len(shard)) > Fraction(n, world_size) + max(first, last):
            bound = f"{n}/{world_size} + {max(first, last)}"
            problems.append(f"rank {rank} holds {len(shard)} frames: more than {bound}")
    return problems


@settings(max_examples=400, deadline=None)
@given(scene_lengths, world_sizes)
def test_scene_shards_are_whole_scenes_every_frame_once_within_the_balance_bound(lengths, world_size) -> None:
    shards = scene_shards(scene_ids(lengths), world_size)
    assert shard_problems(shards, lengths, world_size) == []
    n = sum(lengths)
    if lengths:  # the bound as the docs state it: the ideal share plus the longest scene
        assert max(map(len, shards)) <= Fraction(n, world_size) + max(lengths)


@settings(max_examples=400, deadline=None)
@given(scene_lengths, world_sizes)
def test_each_cut_is_the_scene_boundary_nearest_to_the_ideal_cut(lengths, world_size) -> None:
    """The rule itself, against a brute-force search (a tie goes to the earlier boundary)."""
    shards = scene_shards(scene_ids(lengths), world_size)
    boundaries = np.cumsum([0, *lengths]).tolist()
    n = sum(lengths)
    for r in range(1, world_size):
        ideal = Fraction(r * n, world_size)
        nearest = min(boundaries, key=lambda b: (abs(b - ideal), b))
        assert shards[r].start == nearest, (r, ideal, boundaries)


@settings(max_examples=300, deadline=None)
@given(scene_lengths, world_sizes)
def test_with_scene_shards_every_frame_has_the_memory_of_one_process(lengths, world_size) -> None:
    ids = scene_ids(lengths)
    assert frames_without_memory(ids, scene_shards(ids, world_size)) == []
    assert frames_without_memory(ids, [range(sum(lengths))]) == []  # one process


@pytest.mark.parametrize(
    ("world_size", "cut"),
    [(2, [8]), (3, [5, 10, 11]), (4, [4, 5, 8]), (5, [])],  # chunks of 8, 5, 4, 3 frames
)
def test_upstreams_chunks_lose_the_memory_from_each_cut_to_the_scenes_end(
    world_size: int, cut: list[int]
) -> None:
    """Five 3-frame scenes: a chunk that starts inside a scene runs the rest of it from a reset memory;
    the wrap-around frames (frame 0 again, discarded by the gather) do not count."""
    assert frames_without_memory(scene_ids([3] * 5), upstream_chunks(15, world_size)) == cut


def test_a_rank_that_comes_back_to_its_scene_after_another_frame_has_no_memory_of_it() -> None:
    """One scene, 2 ranks: rank 1 runs frame 2 cold; the model keeps no reset for its wrap-around
    frame 0 (same id as frame 2), which the gather drops anyway; a shard that skips a frame of its
    scene (0, 2) runs frame 2 without frame 1."""
    assert frames_without_memory(["a"] * 3, upstream_chunks(3, 2)) == [2]
    assert frames_without_memory(["a"] * 3, [[0, 2], [1]]) == [1, 2]


def test_the_shard_check_names_a_cut_scene_a_lost_frame_and_an_unbalanced_rank() -> None:
    """shard_problems catches what it exists to catch: upstream's chunks (a scene cut, the wrap-around
    frames twice), a dropped frame, and every scene on rank 0."""
    lengths = [3, 3, 3, 3, 3]  # 15 frames
    chunks = upstream_chunks(15, 4)  # 4 per rank: cuts at 4, 8, 12; frames 0 again at the end
    problems = shard_problems(chunks, lengths, 4)
    assert any("cuts a scene" in p for p in problems) and any("once each" in p for p in problems)
    dropped = [list(s) for s in scene_shards(scene_ids(lengths), 2)]
    dropped[1].pop()
    assert any("once each" in p for p in shard_problems(dropped, lengths, 2))
    unbalanced = shard_problems([range(15), range(15, 15)], lengths, 2)
    assert unbalanced == ["rank 0 holds 15 frames: more than 15/2 + 3"]


def test_more_ranks_than_scenes_leaves_ranks_empty_and_one_rank_holds_everything() -> None:
    ids = scene_ids([4, 4])
    assert [list(s) for s in scene_shards(ids, 1)] == [list(range(8))]
    shards = scene_shards(ids, 5)  # ideal cuts 1.6, 3.2, 4.8, 6.4 -> boundaries 0, 4, 4, 8
    assert [list(s) for s in shards] == [[], [0, 1, 2, 3], [], [4, 5, 6, 7], []]
    assert [list(s) for s in scene_shards([], 3)] == [[], [], []]


def test_a_scene_is_a_run_of_one_id_and_an_id_seen_again_later_starts_a_new_one() -> None:
    """The model resets where the token changes from the frame before; the shards cut only there."""
    assert scene_starts(["a", "a", "b", "b", "a", "a"]).tolist() == [0, 2, 4, 6]
    assert scene_starts(np.array([7, 7, 7], dtype=np.int32)).tolist() == [0, 3]  # the frame store's column
    with pytest.raises(ValueError, match="one id per frame"):
        scene_starts(np.zeros((2, 2)))


@pytest.mark.parametrize("world_size", [0, -1])
def test_a_world_size_below_one_is_refused(world_size: int) -> None:
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        scene_shards(["a"], world_size)
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        upstream_chunks(3, world_size)


def upstreams_sampler(size: int, num_replicas: int, rank: int) -> list[int]:
    """The plugin's ``DistributedSampler.__iter__`` with ``shuffle=False``, transcribed: the index list
    repeated to ``total_size``, rank ``r`` its ``r``-th slice of ``total_size // num_replicas``."""
    num_samples = math.ceil(size / num_replicas)
    total_size = num_samples * num_replicas
    indices = (list(range(size)) * math.ceil(total_size / size))[:total_size]
    per_replicas = total_size // num_replicas
    return indices[rank * per_replicas : (rank + 1) * per_replicas]


@pytest.mark.parametrize("size", [1, 2, 7, 11, 16])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 8])
def test_upstream_chunks_are_upstreams_sampler(size: int, world_size: int) -> None:
    model = [upstreams_sampler(size, world_size, r) for r in range(world_size)]
    assert upstream_chunks(size, world_size) == model


def results_of(shards) -> list[tuple[list[int], list[str]]]:
    """Each rank's part as custom_multi_gpu_test gathers it: its indices and one result per index."""
    return [(list(s), [f"frame {i}" for i in s]) for s in shards]


@settings(max_examples=200, deadline=None)
@given(scene_lengths, world_sizes)
def test_the_gather_puts_scene_shards_back_in_dataset_order(lengths, world_size) -> None:
    n = sum(lengths)
    parts = results_of(scene_shards(scene_ids(lengths), world_size))
    assert in_dataset_order(parts, n) == [f"frame {i}" for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), world_sizes)
def test_the_gather_of_upstreams_chunks_is_upstreams_concatenate_and_cut(size, world_size) -> None:
    """collect_results_cpu before: the parts concatenated in rank order, cut to the set's size. A frame
    that a later rank runs again (the wrap-around) keeps the first result."""
    chunks = upstream_chunks(size, world_size)
    parts = [(c, [f"rank {r}: frame {i}" for i in c]) for r, c in enumerate(chunks)]
    upstream = [result for _, results in parts for result in results][:size]
    assert in_dataset_order(parts, size) == upstream


def test_the_gather_with_an_empty_rank_and_with_one_rank() -> None:
    ids = scene_ids([3, 2])
    assert in_dataset_order(results_of(scene_shards(ids, 3)), 5) == [f"frame {i}" for i in range(5)]
    assert [len(s) for s in scene_shards(ids, 3)] == [3, 0, 2]
    assert in_dataset_order(results_of(scene_shards(ids, 1)), 5) == [f"frame {i}" for i in range(5)]


def test_the_gather_names_a_rank_whose_counts_disagree_a_frame_out_of_range_and_the_lost_frames() -> None:
    with pytest.raises(ValueError, match="rank 1 returned 1 results for the 2 frames of its shard"):
        in_dataset_order([([0], ["a"]), ([1, 2], ["b"])], 3)
    with pytest.raises(ValueError, match="rank 0 returned frame 3, outside the 3 frames"):
        in_dataset_order([([0, 3], ["a", "b"])], 3)
    with pytest.raises(ValueError, match="2 of 13 frames came back from no rank: 4, 12"):
        in_dataset_order(results_of([range(4), range(5, 12)]), 13)


def test_sharding_of_a_config_the_key_and_the_default_of_dali_and_upstream_configs() -> None:
    assert sharding_of({"use_dali_pipeline": True}) == "scenes"
    assert sharding_of({"use_dali_pipeline": True, "use_dali_test_pipeline": False}) == "scenes"
    assert sharding_of({}) == "upstream"
    assert sharding_of({"use_dali_test_pipeline": True}) == "upstream"  # the test loader does not decide
    given_key = {"use_dali_pipeline": True, "data_loading_config": {"test_sharding": "upstream"}}
    assert sharding_of(given_key) == "upstream"
    assert sharding_of({"data_loading_config": {"test_sharding": "scenes"}}) == "scenes"
    named = r"data_loading_config.test_sharding='scene': one of \['scenes', 'upstream'\]"
    with pytest.raises(ConfigValueError, match=named):
        sharding_of({"data_loading_config": {"test_sharding": "scene"}})


def test_the_line_a_rank_prints_of_its_part() -> None:
    assert (
        part_line(1, 3, "scenes", range(3, 6), 6) == "rank 1 of 3 (test_sharding=scenes): 3 of 6 frames, 3..5"
    )
    assert part_line(2, 3, "scenes", [], 6) == "rank 2 of 3 (test_sharding=scenes): 0 of 6 frames"
