"""Per-iteration batch plans: the frames of this rank's batch and their draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config.settings import LoaderConfig
from .augment import AugDraw, frame_draw, queue_frame_draw
from .epoch import GroupEpochSampler
from .queues import choose_queue, queue_seed
from .stream import StreamSampler


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


def make_sampler(args: dict[str, Any]) -> StreamSampler | GroupEpochSampler:
    """The sampler of ``args`` (the loader's ``sampler_args``: ``kind`` + the sampler's arguments)."""
    kwargs = {k: v for k, v in args.items() if k not in ("kind", "labelled", "scenes")}
    if args["kind"] == "epoch":
        return GroupEpochSampler(**kwargs)
    return StreamSampler(**kwargs)


class BatchPlanner:
    """``plan(iteration)``: the frames of this rank's batch and their draws, a pure function of the
    iteration, so the image source (in its own process) and the iterator agree without talking.
    Frames come sample by sample, each sample's ``T = mode.queue_length`` frames oldest first."""

    def __init__(
        self,
        sampler: StreamSampler | GroupEpochSampler,
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
