"""Single-frame training (PETRv1: ``seq_mode=False``, ``queue_length=1``): upstream's
``DistributedGroupSampler`` order per epoch, epochs ending like a DataLoader's, ``filter_empty_gt``
replacements, replicate mode and resume. The order is checked against the real upstream sampler in
tests/equivalence/test_equivalence_stack.py."""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest
from dali_streampetr.loader import build_loader
from dali_streampetr.resume import LoaderStateMismatch, fitting_state
from dali_streampetr.sampling.samplers import GroupEpochSampler, epoch_indices
from dali_streampetr.settings import SINGLE_FRAME
from loader_data import tiny_config


def single_frame_config(filter_empty_gt: bool = True, **dlc) -> dict:
    cfg = tiny_config(**dlc)
    cfg["data"]["train"].update(seq_mode=False, queue_length=1, filter_empty_gt=filter_empty_gt)
    return cfg


@pytest.fixture(scope="module")
def unlabelled_root(tiny_root, tmp_path_factory):
    """The tiny data set with every box of scene 1 marked invalid: its 4 frames have no label."""
    root = tmp_path_factory.mktemp("unlabelled") / "data"
    shutil.copytree(tiny_root, root)
    path = root / "nuscenes2d_temporal_infos_train.pkl"
    data = pickle.loads(path.read_bytes())
    for info in data["infos"]:
        if info["scene_token"] == "scene1":
            info["valid_flag"] = np.zeros_like(info["valid_flag"])
    path.write_bytes(pickle.dumps(data))
    return root


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_an_epoch_covers_every_frame_padded_to_whole_batches_on_every_rank(world_size):
    flags, spg = np.zeros(13, dtype=np.int64), 2
    per_rank = [epoch_indices(flags, spg, world_size, r, seed=5, epoch=0) for r in range(world_size)]
    size = -(-13 // (spg * world_size)) * spg
    assert all(len(p) == size for p in per_rank)
    assert sorted(set(sum(per_rank, []))) == list(range(13))  # padding repeats frames, drops none
    assert epoch_indices(flags, spg, world_size, 0, seed=5, epoch=1) != per_rank[0]  # seeded epoch + seed
    assert epoch_indices(flags, spg, world_size, 0, seed=5, epoch=0) == per_rank[0]


def test_replicate_mode_gives_every_rank_the_whole_epoch_in_the_same_order():
    flags = np.zeros(12, dtype=np.int64)
    orders = [GroupEpochSampler(flags, 2, rank=r, world_size=4, replicate=True).indices(3) for r in range(4)]
    assert all(o == orders[0] for o in orders) and sorted(orders[0]) == list(range(12))


@pytest.fixture(scope="module")
def two_epochs(tiny_root):
    with build_loader(single_frame_config(), tiny_root, seed=7) as loader:
        assert loader.cfg.mode.name == SINGLE_FRAME and len(loader) == 6
        return loader, [list(iter(loader)), list(iter(loader))]


def test_batches_follow_upstreams_epoch_order_and_stop_at_the_epoch_end(two_epochs):
    loader, epochs = two_epochs
    for epoch, batches in enumerate(epochs):
        assert len(batches) == 6  # then StopIteration, as a DataLoader over the epoch's sampler
        got = [r["index"] for b in batches for r in b["dali"]]
        assert got == loader.sampler.indices(epoch)
        for b in batches:
            assert tuple(b["img"].shape[:3]) == (2, 1, 6) and b["prev_exists"].tolist() == [[0.0], [0.0]]
            assert [len(m) for m in b["img_metas"]] == [1, 1]
    assert [r["index"] for r in epochs[0][0]["dali"]] != [r["index"] for r in epochs[1][0]["dali"]]


def test_frames_without_labels_are_replaced_by_upstreams_rule(unlabelled_root):
    with build_loader(single_frame_config(), unlabelled_root, seed=7) as loader:
        empty = {i for i in range(len(loader.frames)) if loader.frames[i].scene_token == "scene1"}
        plans = [p for it in range(4 * len(loader)) for p in loader.planner.plan(it)]
        sampled = [loader.sampler.batch(it) for it in range(4 * len(loader))]
    rejected = [p for p in plans if p.rejected]
    assert rejected and not {p.index for p in plans} & empty  # every empty frame was replaced
    for plan, index in zip(plans, [i for b in sampled for i in b], strict=True):
        assert (plan.rejected[:1] or (plan.index,))[0] == index  # the chain starts at the sampled frame
        assert set(plan.rejected) <= empty
    with build_loader(single_frame_config(filter_empty_gt=False), unlabelled_root, seed=7) as off:
        assert {p.index for it in range(4 * len(off)) for p in off.planner.plan(it)} & empty


def test_no_labelled_frame_with_filter_empty_gt_is_refused_at_build(unlabelled_root, tmp_path):
    root = tmp_path / "none"
    shutil.copytree(unlabelled_root, root)
    path = root / "nuscenes2d_temporal_infos_train.pkl"
    data = pickle.loads(path.read_bytes())
    for info in data["infos"]:
        info["valid_flag"] = np.zeros_like(info["valid_flag"])
    path.write_bytes(pickle.dumps(data))
    with pytest.raises(ValueError, match="filter_empty_gt=True but no frame"):
        build_loader(single_frame_config(), root)


def test_replicated_ranks_share_frames_but_not_draws(tiny_root):
    plans = []
    for rank in range(2):
        cfg = single_frame_config(replicate_dataset_per_gpu=True)
        with build_loader(cfg, tiny_root, rank=rank, world_size=2, seed=7) as loader:
            plans.append(loader.planner.plan(2))
    assert [p.index for p in plans[0]] == [p.index for p in plans[1]]
    assert [p.draw for p in plans[0]] != [p.draw for p in plans[1]]


def test_a_resumed_loader_continues_the_epoch_stream(tiny_root, two_epochs):
    _, epochs = two_epochs
    with build_loader(single_frame_config(), tiny_root, seed=7) as loader:
        state = loader.state_dict()
        assert state["training_mode"] == SINGLE_FRAME and state["batches_per_epoch"] == 6
        loader.load_state_dict(
            {**fitting_state({"ranks": [state]}, state, iteration=8, checkpoint="c"), "epoch": 1}
        )
        after = next(iter(loader))  # epoch 1, batch 2
        assert [r["index"] for r in after["dali"]] == [r["index"] for r in epochs[1][2]["dali"]]
        assert np.array_equal(after["img"].numpy(), epochs[1][2]["img"].numpy())
    with build_loader(tiny_config(), tiny_root, seed=7) as streaming:
        stored = {"ranks": [streaming.state_dict()]}
    with pytest.raises(LoaderStateMismatch, match="training_mode is 'streaming' in the checkpoint"):
        fitting_state(stored, state, iteration=8, checkpoint="c")
