"""The shards case's arithmetic: the best whole-scene split against brute force (and never above the
nearest-boundary split's largest rank), the counts of each sharding, the table."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from dali_streampetr.sampling.eval_shards import scene_shards
from hypothesis import given, settings
from hypothesis import strategies as st
from loaderbench.nuscenes_size.shards import best_largest_rank, shard_stats, table


def brute_force_best(lengths: list[int], world_size: int) -> int:
    """Every placement of world_size - 1 cuts (ranks may be empty): the smallest largest rank."""
    bounds = np.cumsum([0, *lengths]).tolist()
    best = bounds[-1]
    for cuts in combinations(range(len(bounds)), min(world_size - 1, len(bounds))):
        edges = sorted({0, *(bounds[c] for c in cuts), bounds[-1]})
        best = min(best, max(b - a for a, b in zip(edges, edges[1:], strict=False)))
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=9), st.integers(1, 6))
def test_the_best_split_is_the_brute_force_one_and_never_above_the_nearest_boundary_split(
    lengths, world_size
):
    best = best_largest_rank(np.array(lengths), world_size)
    assert best == brute_force_best(lengths, world_size)
    ids = [s for s, n in enumerate(lengths) for _ in range(n)]
    assert best <= max(len(r) for r in scene_shards(ids, world_size))


def test_five_three_frame_scenes_on_four_ranks() -> None:
    ids = np.repeat(np.arange(5), 3)
    stats = shard_stats(ids, 4)
    assert stats["upstream"] == {
        "max": 4, "mean": 4.0, "min": 4, "empty_ranks": 0, "run_twice": 1, "scenes_cut": 2,
        "frames_without_memory": 3,
    }  # fmt: skip
    assert stats["scenes"] == {
        "max": 6, "mean": 3.75, "min": 3, "empty_ranks": 0, "run_twice": 0, "scenes_cut": 0,
        "frames_without_memory": 0,
    }  # fmt: skip
    row = {"ranks": 4, "bound": 15 / 4 + 3, "best_largest_rank": 6, **stats}
    assert (
        table({"frames": 15, "rows": [row]}).splitlines()[-1]
        == "| 4 | 3.8 | 4 | 1 | 2 | 3 | 6 / 3.8 / 3 | 0 | 6 | 6.8 |"
    )
