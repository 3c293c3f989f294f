"""Random augmentation draws, one record per frame, with upstream's distributions and call order.

Upstream draws with the global ``np.random`` inside each worker. Here every (rank, iteration, slot)
gets its own ``np.random.RandomState`` seeded from ``SeedSequence([seed, rank, iteration, slot])``,
so a batch's draws do not depend on which thread or process prepares it, and seeding ``np.random``
with :func:`draw_seed` makes upstream's transforms draw the very same values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..config.settings import AugConfig


@dataclass(frozen=True)
class AugDraw:
    """Everything random about one frame (all 6 cameras share it, as upstream)."""

    resize: float
    resize_dims: tuple[int, int]  # (newW, newH)
    crop: tuple[int, int, int, int]  # (x0, y0, x1, y1) in the resized image
    flip: bool
    rotate: float
    rot_angle: float
    scale_ratio: float
    translation: tuple[float, float, float]

    def as_dict(self) -> dict:
        return asdict(self)


def draw_seed(seed: int, rank: int, iteration: int, slot: int) -> int:
    """The 32-bit seed of the generator for one frame of one batch."""
    return int(np.random.SeedSequence([seed, rank, iteration, slot]).generate_state(1)[0])


def sample_draw(aug: AugConfig, rng: np.random.RandomState) -> AugDraw:
    """ResizeCropFlipRotImage._sample_augmentation (training) then GlobalRotScaleTransImage's draws."""
    H, W = aug.H, aug.W
    fH, fW = aug.final_dim
    resize = float(rng.uniform(*aug.resize_lim))
    new_w, new_h = int(W * resize), int(H * resize)
    crop_h = int((1 - rng.uniform(*aug.bot_pct_lim)) * new_h) - fH
    crop_w = int(rng.uniform(0, max(0, new_w - fW)))
    flip = bool(aug.rand_flip and rng.choice([0, 1]))
    rotate = float(rng.uniform(*aug.rot_lim))
    rot_angle = float(rng.uniform(*aug.rot_range))
    scale_ratio = float(rng.uniform(*aug.scale_ratio_range))
    trans = rng.normal(scale=np.array(aug.translation_std, dtype=np.float32), size=3)
    return AugDraw(
        resize=resize,
        resize_dims=(new_w, new_h),
        crop=(crop_w, crop_h, crop_w + fW, crop_h + fH),
        flip=flip,
        rotate=rotate,
        rot_angle=rot_angle,
        scale_ratio=scale_ratio,
        translation=tuple(float(t) for t in trans),
    )


def frame_draw(aug: AugConfig, seed: int, rank: int, iteration: int, slot: int) -> AugDraw:
    return sample_draw(aug, np.random.RandomState(draw_seed(seed, rank, iteration, slot)))


def queue_frame_draw(aug: AugConfig, seed: int, rank: int, iteration: int, slot: int, t: int) -> AugDraw:
    """The draw of frame ``t`` of a multi-frame sample (each frame through the pipeline on its own)."""
    state = np.random.SeedSequence([seed, rank, iteration, slot, t]).generate_state(1)[0]
    return sample_draw(aug, np.random.RandomState(int(state)))
