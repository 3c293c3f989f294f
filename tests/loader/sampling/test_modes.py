"""The sampling modes (``sampling/modes.py``) travel with the settings into the external source's
worker: a mode and a planner pickled (as a spawned worker gets them) or copied for another thread
plan exactly the loader's batches, their samplers built afresh; the test split's sharding is one of
the known ones."""

from __future__ import annotations

import pickle

import pytest
from dali_streampetr.loader import build_loader
from dali_streampetr.sampling.modes import SHARDINGS, EvalPass, Queues, Streaming
from loader_data import tiny_config, tiny_eval_config, write_eval_infos


def train_config(mode: str) -> dict:
    cfg = tiny_config(replicate_dataset_per_gpu=True, offset_order_per_rank=mode == "streaming")
    if mode == "single_frame":
        cfg["data"]["train"].update(seq_mode=False, queue_length=1, filter_empty_gt=True)
    elif mode == "sliding_window":
        cfg["data"]["train"].update(seq_mode=False, queue_length=3, random_length=1, filter_empty_gt=False)
    return cfg


@pytest.mark.parametrize("mode", ["streaming", "single_frame", "sliding_window", "test"])
def test_a_planner_pickled_or_copied_plans_the_loaders_batches(tiny_root, mode: str) -> None:
    """Rank 1 of 2 (replicated, with the per-rank stream offset where the mode takes it), 12
    iterations: the pickled planner (a spawned worker's) and the fresh copy (the image source's in
    this process) plan the very frames, draws and queues of the loader's planner."""
    if mode == "test":
        write_eval_infos(tiny_root)
        cfg, split = tiny_eval_config(), "val"
    else:
        cfg, split = train_config(mode), "train"
    loader = build_loader(cfg, tiny_root, rank=1, world_size=2, seed=5, split=split)
    planner = loader.planner
    assert planner.mode.name == mode and pickle.loads(pickle.dumps(loader.cfg)) == loader.cfg
    want = [planner.plan(i) for i in range(12)]
    for copy in (pickle.loads(pickle.dumps(planner)), planner.fresh()):
        assert copy.sampler is not planner.sampler and copy.mode == planner.mode
        assert [copy.plan(i) for i in range(12)] == want
    loader.close()


def test_each_mode_is_a_value_that_pickles() -> None:
    for mode in (Streaming(), Queues(queue_length=8, random_length=1), EvalPass()):
        assert pickle.loads(pickle.dumps(mode)) == mode


def test_a_test_sharding_outside_the_known_ones_is_refused_by_name() -> None:
    assert sorted(SHARDINGS) == ["scenes", "upstream"]
    with pytest.raises(
        ValueError, match=r"test sharding must be one of \['scenes', 'upstream'\], got 'scene'"
    ):
        EvalPass(sharding="scene")
