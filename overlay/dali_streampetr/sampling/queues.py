"""The frames of one training sample outside streaming, as upstream's ``prepare_train_data`` and
``__getitem__`` choose them (``CustomNuScenesDataset``, mmdet3d's ``Custom3DDataset``):

- the queue: ``range(index - queue_length - random_length + 1, index)``, ``random.shuffle``d, the
  first ``random_length`` dropped, sorted, ``index`` appended, negatives clamped to 0;
- ``prev_exists`` per frame: False at the queue's first frame and wherever the scene changes;
- ``filter_empty_gt``: a queue whose last ``num_frame_losses`` frames hold no label is refused and
  ``_rand_another`` draws ``np.random.choice`` over the frames of the same flag group; repeat.

Upstream draws with the worker's global ``random`` / ``np.random``; here each (seed, rank,
iteration, slot) has its own ``random.Random`` and ``np.random.RandomState`` making the very same
calls, so a sample does not depend on which process prepares it (the equivalence harness replays
them into upstream's code).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np


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
