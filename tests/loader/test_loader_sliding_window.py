"""Sliding-window training (the 8-key config: ``seq_mode=False``, ``queue_length > 1``): each sample
is upstream's queue (``random_length`` subsampling, clamping, ``prev_exists`` by scene), every frame
with its own draw, stacked on a T axis; ``filter_empty_gt`` on the last ``num_frame_losses`` frames.
The queues and batches are checked against the real upstream dataset in
tests/equivalence/test_equivalence_stack.py."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from dali_streampetr.batch.transforms import frame_targets
from dali_streampetr.loader import build_loader
from dali_streampetr.sampling.plan import choose_queue, window
from dali_streampetr.settings import SLIDING_WINDOW
from loader_data import tiny_config

T = 3


def window_config(**dlc) -> dict:
    cfg = tiny_config(**{"py_num_workers": 1, **dlc})
    cfg["data"]["train"].update(seq_mode=False, queue_length=T, random_length=1, num_frame_losses=2,
                                filter_empty_gt=False)  # fmt: skip
    return cfg


def test_the_queue_is_upstreams_index_list():
    """``random_length`` random frames of the ``queue_length + random_length - 1`` before the index
    are dropped; the rest sorted, the index appended, negatives clamped to frame 0."""
    for index in range(12):
        frames, shuffled = window(index, 4, 2, random.Random(index))
        kept = sorted(shuffled[2:])
        assert len(frames) == 4 and frames[-1] == index
        assert frames[:-1] == [max(0, i) for i in kept] and sorted(shuffled) == list(range(index - 5, index))
    assert window(0, 3, 0, random.Random(0))[0] == [0, 0, 0]


def test_prev_exists_follows_the_scene_within_the_queue():
    scenes = np.array([0, 0, 0, 1, 1, 1])
    kw = {"random_length": 0, "num_frame_losses": 1, "filter_empty_gt": False, "labelled": np.ones(6, bool),
          "scenes": scenes, "flags": np.zeros(6, np.int64), "seed": 1}  # fmt: skip
    choice = choose_queue(4, queue_length=4, **kw)
    assert choice.frames == (1, 2, 3, 4) and choice.prev_exists == (False, True, False, True)
    clamped = choose_queue(1, queue_length=3, **kw)
    assert clamped.frames == (0, 0, 1) and clamped.prev_exists == (False, True, True)


def test_filter_looks_at_the_last_num_frame_losses_frames():
    labelled = np.array([True, True, False, True, True, True])
    kw = {"queue_length": 2, "random_length": 0, "filter_empty_gt": True, "labelled": labelled,
          "scenes": np.zeros(6, np.int64), "flags": np.zeros(6, np.int64), "seed": 3}  # fmt: skip
    assert choose_queue(3, num_frame_losses=1, **kw).rejected == ()  # only frame 3 is looked at
    refused = choose_queue(3, num_frame_losses=2, **kw)  # frame 2 has no label: upstream refuses
    assert refused.rejected[0] == 3 and refused.frames[-1] != 3 and all(labelled[list(refused.frames)])


@pytest.fixture(scope="module")
def window_batches(tiny_root):
    with build_loader(window_config(), tiny_root, seed=5) as loader:
        assert loader.cfg.mode.name == SLIDING_WINDOW
        return loader, [next(iter(loader)) for _ in range(3)]


def test_batches_stack_the_queue_on_a_time_axis(window_batches):
    loader, batches = window_batches
    B, N = 2, 6
    for it, batch in enumerate(batches):
        assert tuple(batch["img"].shape[:3]) == (B, T, N)
        assert tuple(batch["lidar2img"].shape) == (B, T, N, 4, 4) and tuple(batch["ego_pose"].shape) == (
            B,
            T,
            4,
            4,
        )
        assert tuple(batch["timestamp"].shape) == (B, T) and tuple(batch["prev_exists"].shape) == (B, T)
        plans = loader.planner.plan(it)
        assert [[f["index"] for f in s["frames"]] for s in batch["dali"]] == [
            [p.index for p in plans[b * T : (b + 1) * T]] for b in range(B)
        ]
        for b, sample in enumerate(batch["dali"]):
            assert sample["index"] == loader.sampler.batch(it)[b] == sample["frames"][-1]["index"]
            assert len(batch["img_metas"][b]) == T and len(batch["gt_bboxes_3d"][b]) == T
            for t, frame in enumerate(sample["frames"]):
                plan = plans[b * T + t]
                assert batch["prev_exists"][b, t].item() == float(plan.prev_exists)
                assert batch["img_metas"][b][t]["scene_token"] == loader.frames[frame["index"]].scene_token
                want = frame_targets(loader.frames[plan.index], plan.draw, loader.cfg)
                assert torch.equal(batch["lidar2img"][b, t], torch.from_numpy(want["lidar2img"]))
                assert torch.equal(batch["gt_bboxes_3d"][b][t], torch.from_numpy(want["gt_bboxes_3d"]))
                assert len(batch["gt_bboxes"][b][t]) == N


def test_each_frame_has_its_own_draw_and_its_own_pixels(window_batches):
    _, batches = window_batches
    draws = [f["draw"] for s in batches[0]["dali"] for f in s["frames"]]
    assert len({(d.resize, d.crop, d.flip) for d in draws}) == len(draws)
    img = batches[0]["img"]
    assert not torch.equal(img[0, 0], img[0, 1])


def test_resume_continues_the_window_stream(tiny_root, window_batches):
    _, batches = window_batches
    with build_loader(window_config(), tiny_root, seed=5) as loader:
        loader.load_state_dict({**loader.state_dict(), "iteration": 2})
        again = next(iter(loader))
    assert torch.equal(again["img"], batches[2]["img"])
    assert [s["frames"] for s in again["dali"]] == [s["frames"] for s in batches[2]["dali"]]


def test_a_bad_image_blackens_one_frame_of_the_queue(damaged_root):
    with build_loader(window_config(on_bad_image="skip"), damaged_root, seed=5) as loader:
        plan = loader.planner.plan(0)
        frame = loader.frames[plan[1].index]  # frame t=1 of the first sample
        damaged = frame.img_paths[2]
        Path(damaged).write_bytes(b"not a jpeg")
        batch = next(iter(loader))
    for b, sample in enumerate(batch["dali"]):
        for t, rec in enumerate(sample["frames"]):
            bad = loader.frames[rec["index"]].img_paths[2] == damaged
            assert rec["bad_cameras"] == (["CAM_FRONT_LEFT"] if bad else [])
            if bad:
                assert len(batch["gt_bboxes"][b][t][2]) == 0 and batch["img"][b, t, 2].abs().sum() > 0
    assert loader.bad_images >= 1
