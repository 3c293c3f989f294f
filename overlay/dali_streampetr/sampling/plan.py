"""Per-iteration batch plans: the frames of this rank's batch and their augmentation draws.

The draws: one record per frame (:class:`AugDraw`), with upstream's distributions and call order.

Upstream draws with the global ``np.random`` inside each worker. Here every (rank, iteration, slot)
gets its own ``np.random.RandomState`` seeded from ``SeedSequence([seed, rank, iteration, slot])``,
so a batch's draws do not depend on which thread or process prepares it, and seeding ``np.random``
with :func:`draw_seed` makes upstream's transforms draw the very same values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..batch.transforms import AugDraw
from ..config.settings import AugConfig, LoaderConfig
from .epoch import GroupEpochSampler
from .nonshuffled import NonShuffledSampler
from .queues import choose_queue, queue_seed
from .stream import StreamSampler

Sampler = StreamSampler | GroupEpochSampler | NonShuffledSampler


@dataclass(frozen=True)
class SamplePlan:
    """One frame of a batch: its dataset index, ``prev_exists`` and augmentation draw. The last
    frame of a sample also carries the sample's queue draws (``rejected``, ``shuffles``)."""

    index: int
    prev_exists: bool
    draw: AugDraw
    slot: int = 0
    rejected: tuple[int, ...] = ()
    shuffles: tuple[tuple[int, ...], ...] = ()


def make_sampler(args: dict[str, Any]) -> Sampler:
    """The sampler of ``args`` (the loader's ``sampler_args``: ``kind`` + the sampler's arguments)."""
    kwargs = {k: v for k, v in args.items() if k not in ("kind", "labelled", "scenes")}
    if args["kind"] == "epoch":
        return GroupEpochSampler(**kwargs)
    if args["kind"] == "test":
        return NonShuffledSampler(**kwargs)
    return StreamSampler(**kwargs)


class BatchPlanner:
    """``plan(iteration)``: the frames of this rank's batch and their draws, a pure function of the
    iteration, so the image source (in its own process) and the iterator agree without talking.
    Frames come sample by sample, each sample's ``T = mode.queue_length`` frames oldest first."""

    def __init__(
        self,
        sampler: Sampler,
        cfg: LoaderConfig,
        seed: int,
        *,
        labelled: np.ndarray | None = None,
        scenes: np.ndarray | None = None,
    ) -> None:
        self.sampler, self.cfg, self.seed = sampler, cfg, seed
        self.labelled, self.scenes = labelled, scenes

    @classmethod
    def from_args(cls, args: dict[str, Any], cfg: LoaderConfig, seed: int) -> BatchPlanner:
        return cls(make_sampler(args), cfg, seed, labelled=args.get("labelled"), scenes=args.get("scenes"))

    def plan(self, iteration: int) -> list[SamplePlan]:
        rank, aug = self.sampler.rank, self.cfg.aug
        if isinstance(self.sampler, NonShuffledSampler):  # test: one deterministic draw for every frame
            draw = eval_draw(aug)
            return [SamplePlan(index, False, draw) for index in self.sampler.batch(iteration)]
        if not isinstance(self.sampler, GroupEpochSampler):
            indices = self.sampler.batch(iteration)
            draws = [frame_draw(aug, self.seed, rank, iteration, slot) for slot in range(len(indices))]
            return [
                SamplePlan(index, self.sampler.prev_exists(index), draw, slot)
                for slot, (index, draw) in enumerate(zip(indices, draws, strict=True))
            ]
        mode, out = self.cfg.mode, []
        for slot, index in enumerate(self.sampler.batch(iteration)):
            choice = choose_queue(
                index, queue_length=mode.queue_length, random_length=mode.random_length,
                num_frame_losses=mode.num_frame_losses, filter_empty_gt=mode.filter_empty_gt,
                labelled=self.labelled, scenes=self.scenes, flags=self.sampler.flags,
                seed=queue_seed(self.seed, rank, iteration, slot),
            )  # fmt: skip
            last = len(choice.frames) - 1
            for t, (frame, prev) in enumerate(zip(choice.frames, choice.prev_exists, strict=True)):
                draw = (
                    frame_draw(aug, self.seed, rank, iteration, slot)
                    if last == 0
                    else queue_frame_draw(aug, self.seed, rank, iteration, slot, t)
                )
                extra = {"rejected": choice.rejected, "shuffles": choice.shuffles} if t == last else {}
                out.append(SamplePlan(frame, prev, draw, slot, **extra))
        return out


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


def eval_draw(aug: AugConfig) -> AugDraw:
    """ResizeCropFlipRotImage._sample_augmentation with ``training=False``: the resize that covers
    ``final_dim`` (``max(fH / H, fW / W)``, not ``resize_lim``), the crop at the mean of
    ``bot_pct_lim`` from the bottom and centred horizontally, no flip, no rotation; the test pipeline
    has no GlobalRotScaleTransImage (angle 0, scale 1, no translation)."""
    H, W = aug.H, aug.W
    fH, fW = aug.final_dim
    resize = max(fH / H, fW / W)
    new_w, new_h = int(W * resize), int(H * resize)
    crop_h = int((1 - float(np.mean(aug.bot_pct_lim))) * new_h) - fH
    crop_w = int(max(0, new_w - fW) / 2)
    return AugDraw(
        resize=resize,
        resize_dims=(new_w, new_h),
        crop=(crop_w, crop_h, crop_w + fW, crop_h + fH),
        flip=False,
        rotate=0.0,
        rot_angle=0.0,
        scale_ratio=1.0,
        translation=(0.0, 0.0, 0.0),
    )


def frame_draw(aug: AugConfig, seed: int, rank: int, iteration: int, slot: int) -> AugDraw:
    return sample_draw(aug, np.random.RandomState(draw_seed(seed, rank, iteration, slot)))


def queue_frame_draw(aug: AugConfig, seed: int, rank: int, iteration: int, slot: int, t: int) -> AugDraw:
    """The draw of frame ``t`` of a multi-frame sample (each frame through the pipeline on its own)."""
    state = np.random.SeedSequence([seed, rank, iteration, slot, t]).generate_state(1)[0]
    return sample_draw(aug, np.random.RandomState(int(state)))
