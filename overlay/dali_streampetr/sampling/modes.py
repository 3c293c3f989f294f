"""The sampling modes: what a split's sampler, queues, draws and targets are, one frozen dataclass each
(:class:`Streaming`, :class:`Queues`, :class:`EvalPass`), implementing :class:`..settings.SamplingMode`.
The config reader picks one (``LoaderConfig.mode``); the planner (:mod:`.plan`) and the image source
ask it instead of branching on its kind. Which upstream config selects which mode: docs/loader.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..batch.transforms import AugDraw, eval_targets, frame_targets
from ..frames.records import Frame
from ..settings import SINGLE_FRAME, SLIDING_WINDOW, STREAMING, TEST, AugConfig, LoaderConfig
from .eval_shards import SCENES, UPSTREAM, scene_shards, upstream_chunks
from .plan import (
    BatchPlanner,
    QueueChoice,
    SlotKey,
    choose_queue,
    eval_draw,
    frame_draw,
    labelled_frames,
    queue_frame_draw,
    queue_seed,
    scene_ids,
)
from .samplers import EvalSampler, GroupEpochSampler, StreamSampler, group_flags


@dataclass(frozen=True)
class Streaming:
    """Upstream's streaming training: one frame per sample, each batch slot walking consecutive
    frames of one sequence group, ``prev_exists`` from the groups."""

    name: ClassVar[str] = STREAMING
    queue_length: ClassVar[int] = 1
    epoch_based: ClassVar[bool] = False  # the stream is infinite
    needs_process_group: ClassVar[bool] = False
    close_after_pass: ClassVar[bool] = False
    targets: ClassVar[Callable[..., dict]] = staticmethod(frame_targets)

    def planner(
        self, cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
    ) -> BatchPlanner:
        flags = group_flags([frames[i].has_sweeps for i in range(len(frames))], cfg.seq_split_num)
        sampler = StreamSampler(
            flags, cfg.samples_per_gpu, rank=rank, world_size=world_size, seed=seed,
            replicate=cfg.replicate_dataset_per_gpu, offset_per_rank=cfg.offset_order_per_rank,
        )  # fmt: skip
        return BatchPlanner(self, sampler, cfg.aug, seed)

    def sample_frames(self, planner: BatchPlanner, index: int, key: SlotKey) -> QueueChoice:
        return QueueChoice((index,), (planner.sampler.prev_exists(index),))

    def draw(self, aug: AugConfig, key: SlotKey, t: int) -> AugDraw:
        return frame_draw(aug, *key)


@dataclass(frozen=True)
class Queues:
    """Upstream's training with ``seq_mode=False``: ``DistributedGroupSampler`` epochs, each sample a
    queue of ``queue_length`` frames (single frame at 1, the sliding window above), each frame with
    its own draw; the queue values as the dataset reads them."""

    queue_length: int = 1  # frames per sample (the T axis)
    random_length: int = 0
    num_frame_losses: int = 1
    filter_empty_gt: bool = True
    epoch_based: ClassVar[bool] = True  # an epoch ends with StopIteration, as a DataLoader's
    needs_process_group: ClassVar[bool] = True  # DistributedGroupSampler (runner/dataloader.py)
    close_after_pass: ClassVar[bool] = False
    targets: ClassVar[Callable[..., dict]] = staticmethod(frame_targets)

    @property
    def name(self) -> str:
        return SINGLE_FRAME if self.queue_length == 1 else SLIDING_WINDOW

    def planner(
        self, cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
    ) -> BatchPlanner:
        labelled = labelled_frames(frames, cfg.point_cloud_range, len(cfg.class_names))
        if self.filter_empty_gt and not labelled.any():
            raise ValueError(
                "data.train.filter_empty_gt=True but no frame of the info file has a label left after the "
                "range and class filters: upstream's __getitem__ would draw replacements forever; set "
                "filter_empty_gt=False"
            )
        flags = np.zeros(len(frames), dtype=np.int64)  # Custom3DDataset's flag outside seq_mode: all zero
        sampler = GroupEpochSampler(
            flags, cfg.samples_per_gpu, rank=rank, world_size=world_size, seed=seed,
            replicate=cfg.replicate_dataset_per_gpu,
        )  # fmt: skip
        return BatchPlanner(self, sampler, cfg.aug, seed, labelled=labelled, scenes=scene_ids(frames))

    def sample_frames(self, planner: BatchPlanner, index: int, key: SlotKey) -> QueueChoice:
        return choose_queue(
            index, queue_length=self.queue_length, random_length=self.random_length,
            num_frame_losses=self.num_frame_losses, filter_empty_gt=self.filter_empty_gt,
            labelled=planner.labelled, scenes=planner.scenes, flags=planner.sampler.flags,
            seed=queue_seed(*key),
        )  # fmt: skip

    def draw(self, aug: AugConfig, key: SlotKey, t: int) -> AugDraw:
        """A single frame's draw is the streaming one; a queue's frames each have their own."""
        return frame_draw(aug, *key) if self.queue_length == 1 else queue_frame_draw(aug, *key, t)


SHARDINGS: dict[str, Callable[[Sequence[Frame], int], Sequence[Sequence[int]]]] = {
    UPSTREAM: lambda frames, world_size: upstream_chunks(len(frames), world_size),
    SCENES: lambda frames, world_size: scene_shards(scene_ids(frames), world_size),
}
"""How the test loader splits the set between ranks (``EvalPass.sharding``, the config key
``data_loading_config.test_sharding``): the frames of every rank (:mod:`.eval_shards`)."""


@dataclass(frozen=True)
class EvalPass:
    """Upstream's test path (``prepare_test_data``): one frame per sample through the test pipeline,
    in dataset order, one pass over this rank's shard per ``iter()`` (``sharding``: a key of
    :data:`SHARDINGS`); the deterministic test resize and crop; no annotations."""

    sharding: str = UPSTREAM  # a key of SHARDINGS
    name: ClassVar[str] = TEST
    queue_length: ClassVar[int] = 1
    epoch_based: ClassVar[bool] = True  # a pass ends with StopIteration
    needs_process_group: ClassVar[bool] = False
    close_after_pass: ClassVar[bool] = True  # no worker waits through the training until the next pass
    targets: ClassVar[Callable[..., dict]] = staticmethod(eval_targets)

    def __post_init__(self) -> None:
        if self.sharding not in SHARDINGS:
            raise ValueError(f"test sharding must be one of {sorted(SHARDINGS)}, got {self.sharding!r}")

    def planner(
        self, cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
    ) -> BatchPlanner:
        shards = SHARDINGS[self.sharding](frames, world_size)
        sampler = EvalSampler(shards, cfg.samples_per_gpu, rank=rank, world_size=world_size)
        return BatchPlanner(self, sampler, cfg.aug, seed)

    def sample_frames(self, planner: BatchPlanner, index: int, key: SlotKey) -> QueueChoice:
        return QueueChoice((index,), (False,))  # the model resets its memory where scene_token changes

    def draw(self, aug: AugConfig, key: SlotKey, t: int) -> AugDraw:
        return eval_draw(aug)
