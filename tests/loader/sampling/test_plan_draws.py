"""Augmentation draws: upstream's call order and distributions, replayable per (rank, iteration, slot)."""

from __future__ import annotations

import numpy as np
from dali_streampetr.sampling.plan import draw_seed, frame_draw
from dali_streampetr.settings import AugConfig

AUG = AugConfig()


def upstream_draws(seed: int) -> tuple:
    """The np.random calls of ResizeCropFlipRotImage (training) + GlobalRotScaleTransImage, in order."""
    np.random.seed(seed)
    resize = np.random.uniform(0.38, 0.55)
    new_w, new_h = int(1600 * resize), int(900 * resize)
    crop_h = int((1 - np.random.uniform(0.0, 0.0)) * new_h) - 256
    crop_w = int(np.random.uniform(0, max(0, new_w - 704)))
    flip = bool(np.random.choice([0, 1]))
    np.random.uniform(0.0, 0.0)
    rot = np.random.uniform(-0.3925, 0.3925)
    scale = np.random.uniform(0.95, 1.05)
    np.random.normal(scale=np.zeros(3, dtype=np.float32), size=3)
    return resize, (new_w, new_h), (crop_w, crop_h, crop_w + 704, crop_h + 256), flip, rot, scale


def test_draws_replay_upstream_calls_with_the_same_seed():
    for it in range(20):
        d = frame_draw(AUG, seed=3, rank=1, iteration=it, slot=1)
        resize, dims, crop, flip, rot, scale = upstream_draws(draw_seed(3, 1, it, 1))
        assert (d.resize, d.resize_dims, d.crop, d.flip, d.rot_angle, d.scale_ratio) == (
            resize, dims, crop, flip, rot, scale,
        )  # fmt: skip


def test_draws_are_deterministic_and_differ_between_ranks_and_slots():
    assert frame_draw(AUG, 0, 0, 5, 0) == frame_draw(AUG, 0, 0, 5, 0)
    assert frame_draw(AUG, 0, 0, 5, 0) != frame_draw(AUG, 0, 1, 5, 0)
    assert frame_draw(AUG, 0, 0, 5, 0) != frame_draw(AUG, 0, 0, 5, 1)


def test_distributions_match_upstream_ranges():
    # statistical, not rounding bounds: each sample mean of 3000 seeded (so deterministic) draws
    # lies within 3.8 to 4.9 of its standard deviations of the expected value
    draws = [frame_draw(AUG, 11, 0, i, 0) for i in range(3000)]
    resize = np.array([d.resize for d in draws])
    assert resize.min() >= 0.38 and resize.max() < 0.55
    assert abs(resize.mean() - 0.465) < 0.004  # U(0.38, 0.55): sd of the mean 0.0009
    flips = np.mean([d.flip for d in draws])
    assert abs(flips - 0.5) < 0.04  # Bernoulli(0.5): sd of the mean 0.009
    crop_w = np.array([d.crop[0] for d in draws])
    room = np.array([max(0, d.resize_dims[0] - 704) for d in draws])
    assert (crop_w <= room).all() and (crop_w[room == 0] == 0).all()
    assert abs(np.mean(crop_w[room > 40] / room[room > 40]) - 0.5) < 0.03  # ~U(0, 1): sd <= 0.009
    assert all(d.crop[1] == d.resize_dims[1] - 256 for d in draws)  # bottom crop
    rot = np.array([d.rot_angle for d in draws])
    assert rot.min() >= -0.3925 and rot.max() < 0.3925 and abs(rot.mean()) < 0.02  # sd of the mean 0.0041
    scale = np.array([d.scale_ratio for d in draws])
    assert scale.min() >= 0.95 and scale.max() < 1.05 and abs(scale.mean() - 1.0) < 0.002  # sd 0.00053
