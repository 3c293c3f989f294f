"""Per-iteration batch plans: the frames of this rank's batch (:class:`BatchPlanner`; outside
streaming the queue upstream's ``prepare_train_data`` and ``__getitem__`` choose, :func:`choose_queue`)
and their augmentation draws (:class:`AugDraw`), a pure function of the iteration, so the image
source, in its own process, and the loader agree without talking.

Upstream draws with the worker's global ``random`` / ``np.random``. Here every (rank, iteration,
slot) gets its own generators seeded from ``SeedSequence([seed, rank, iteration, slot])`` making the
very same calls, so a batch does not depend on which thread or process prepares it, and seeding
``np.random`` with :func:`draw_seed` makes upstream's transforms draw the very same values."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..batch.transforms import AugDraw, filter_objects
from ..frames.records import Frame
from ..frames.store import FrameStore
from ..settings import AugConfig, SamplingMode
from .samplers import Sampler


def labelled_frames(
    frames: Sequence[Frame], point_cloud_range: tuple[float, ...], num_classes: int
) -> np.ndarray:
    """Per frame: whether a 3D box is left after ObjectRangeFilter and ObjectNameFilter, i.e.
    upstream's ``filter_empty_gt`` test ``(gt_labels_3d != -1).any()`` on the pipeline's output."""
    if isinstance(frames, FrameStore):
        return _labelled_columns(frames, point_cloud_range, num_classes)
    out = np.zeros(len(frames), dtype=bool)
    for i in range(len(frames)):
        frame = frames[i]
        _, labels = filter_objects(frame.gt_boxes, frame.gt_labels, point_cloud_range, num_classes)
        out[i] = len(labels) > 0
    return out


def _labelled_columns(
    store: FrameStore, point_cloud_range: tuple[float, ...], num_classes: int
) -> np.ndarray:
    """:func:`labelled_frames` over all boxes at once: the tests of :func:`..batch.transforms.filter_objects`
    (BEV centre strictly inside the float32 range, label in 0..num_classes-1; the yaw is irrelevant)."""
    boxes, labels = store.columns["gt_boxes"], store.columns["gt_labels"]
    x0, y0, _, x1, y1, _ = np.asarray(point_cloud_range, dtype=np.float32)
    x, y = boxes[:, 0], boxes[:, 1]
    keep = (x > x0) & (y > y0) & (x < x1) & (y < y1) & (labels >= 0) & (labels < num_classes)
    kept_before = np.concatenate([[0], np.cumsum(keep)])[store.columns["box_offsets"]]
    return kept_before[1:] > kept_before[:-1]


def scene_ids(frames: Sequence[Frame]) -> np.ndarray:
    """Per frame: a small integer per distinct ``scene_token`` (equal ids = same scene), numbered in
    the order the scenes first appear."""
    if isinstance(frames, FrameStore):  # equal tokens have one index into the store's string table
        _, first, inverse = np.unique(frames.columns["scene_token"], return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))
        return rank[inverse.reshape(-1)]
    ids: dict[str, int] = {}
    return np.array(
        [ids.setdefault(frames[i].scene_token, len(ids)) for i in range(len(frames))], dtype=np.int64
    )


# -- the queue of one sample outside streaming


@dataclass(frozen=True)
class QueueChoice:
    """One sample: its frames (oldest first, the sampled index last) and every draw behind them."""

    frames: tuple[int, ...]
    prev_exists: tuple[bool, ...]
    rejected: tuple[int, ...] = ()  # indices refused by filter_empty_gt, in order
    shuffles: tuple[tuple[int, ...], ...] = ()  # random.shuffle's result, per attempt


def queue_seed(seed: int, rank: int, iteration: int, slot: int) -> int:
    """The 32-bit seed of one sample's queue and replacement draws (apart from its augmentation's)."""
    return int(np.random.SeedSequence([seed, rank, iteration, slot], spawn_key=(1,)).generate_state(1)[0])


def window(
    index: int, queue_length: int, random_length: int, rng: random.Random
) -> tuple[list[int], list[int]]:
    """(frames, shuffled list) of upstream's queue for ``index``."""
    index_list = list(range(index - queue_length - random_length + 1, index))
    rng.shuffle(index_list)
    shuffled = list(index_list)
    frames = sorted(index_list[random_length:])
    frames.append(index)
    return [max(0, i) for i in frames], shuffled


def prev_by_scene(frames: list[int], scenes: np.ndarray) -> tuple[bool, ...]:
    """False at the first frame and at every scene change within the queue, else True."""
    out, prev = [], None
    for i in frames:
        out.append(prev is not None and scenes[i] == prev)
        prev = scenes[i]
    return tuple(out)


def choose_queue(
    index: int,
    *,
    queue_length: int,
    random_length: int,
    num_frame_losses: int,
    filter_empty_gt: bool,
    labelled: np.ndarray,
    scenes: np.ndarray,
    flags: np.ndarray,
    seed: int,
) -> QueueChoice:
    """The sample upstream's ``__getitem__(index)`` returns, with generators seeded ``seed``."""
    rng, np_rng = random.Random(seed), np.random.RandomState(seed)
    rejected, shuffles = [], []
    while True:
        frames, shuffled = window(index, queue_length, random_length, rng)
        shuffles.append(tuple(shuffled))
        if not filter_empty_gt or all(labelled[frames[-k - 1]] for k in range(num_frame_losses)):
            return QueueChoice(tuple(frames), prev_by_scene(frames, scenes), tuple(rejected), tuple(shuffles))
        rejected.append(index)
        index = int(np_rng.choice(np.where(flags == flags[index])[0]))


# -- the plan and its draws


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


class SlotKey(NamedTuple):
    """One batch slot of one rank and iteration: what seeds its queue and its frames' draws."""

    seed: int
    rank: int
    iteration: int
    slot: int


class BatchPlanner:
    """``plan(iteration)``: this rank's batch, sample by sample, each sample's ``T`` frames oldest
    first, with their draws (:mod:`.modes`). A copy (pickled, or :meth:`fresh`) has a sampler of its own."""

    def __init__(
        self,
        mode: SamplingMode,
        sampler: Sampler,
        aug: AugConfig,
        seed: int,
        *,
        labelled: np.ndarray | None = None,
        scenes: np.ndarray | None = None,
    ) -> None:
        self.mode, self.sampler, self.aug, self.seed = mode, sampler, aug, seed
        self.labelled, self.scenes = labelled, scenes

    def fresh(self) -> BatchPlanner:
        """This planner with a sampler of its own, for another thread (a sampler's caches are not
        shared between threads); the facts are read-only and shared."""
        twin = copy.copy(self)
        twin.sampler = copy.deepcopy(self.sampler)
        return twin

    def plan(self, iteration: int) -> list[SamplePlan]:
        out = []
        for slot, index in enumerate(self.sampler.batch(iteration)):
            key = SlotKey(self.seed, self.sampler.rank, iteration, slot)
            choice = self.mode.sample_frames(self, index, key)
            last = len(choice.frames) - 1
            for t, (frame, prev) in enumerate(zip(choice.frames, choice.prev_exists, strict=True)):
                extra = {"rejected": choice.rejected, "shuffles": choice.shuffles} if t == last else {}
                out.append(SamplePlan(frame, prev, self.mode.draw(self.aug, key, t), slot, **extra))
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
