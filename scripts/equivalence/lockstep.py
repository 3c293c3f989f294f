"""Step the two loaders in lock step on the same config, data and seed: the DALI loader, and the
original one (:mod:`.original`) with the DALI draws replayed into it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .draw_replay import DrawReplayer, ReplayError
from .original import original_dataset, original_loader


@dataclass
class BatchPair:
    """One iteration: the DALI batch (plain + collated), the original collated batch, and per slot the
    dataset index each side used and the draw values upstream consumed."""

    iteration: int
    dali: dict[str, Any]
    dali_collated: dict[str, Any]
    original: dict[str, Any]
    dali_indices: list[int]
    original_indices: list[int]
    used_draws: list[dict[str, Any]]


class _PipelineReplay:
    """Stands in for the dataset's ``Compose``: every frame upstream runs through the pipeline gets
    the next queued DALI draw replayed; what upstream consumed is logged per frame."""

    def __init__(self, pipeline: Any, replayer: DrawReplayer) -> None:
        self.pipeline, self.replayer = pipeline, replayer
        self.draws: list[Any] = []
        self.used: list[dict] = []

    def __call__(self, results: dict) -> dict:
        if not self.draws:
            raise ReplayError("upstream ran the pipeline on more frames than the DALI batch holds")
        self.replayer.arm(self.draws.pop(0))
        out = self.pipeline(results)
        self.used.append(self.replayer.finish())
        return out


class ReplayShuffle:
    """Stands in for the ``random`` module inside upstream's dataset for one ``prepare_train_data``:
    ``shuffle`` puts the list in the order the DALI loader's own shuffle gave it."""

    def __init__(self, order: tuple[int, ...]) -> None:
        self.order = list(order)

    def shuffle(self, items: list[int]) -> None:
        if sorted(items) != sorted(self.order):
            raise ReplayError(f"upstream shuffles {items}, the DALI loader shuffled {self.order}")
        items[:] = self.order


class LockStep:
    """Iterate both loaders with the DALI draws replayed into the original: every frame's
    augmentation, and outside streaming every sample's queue draws (``random.shuffle`` of the queue,
    upstream's module-level ``random``) and ``filter_empty_gt`` replacements (``_rand_another``),
    each checked against upstream's own arguments (the list shuffled, the refused frame's pool)."""

    def __init__(self, cfg: Any, data_root: Path, seed: int = 0, **dali_overrides: Any) -> None:
        from dali_streampetr import build_loader

        self.cfg, self.seed = cfg, seed
        self.dataset = original_dataset(cfg)
        self.replay = _PipelineReplay(self.dataset.pipeline, DrawReplayer(self.dataset))
        self.dataset.pipeline = self.replay
        self._shuffles: list[tuple[int, ...]] = []
        self._replacements: list[int] = []
        self._calls: list[tuple[int, bool, int]] = []  # (index, accepted, frames run) per prepare call
        self._prepare = self.dataset.prepare_train_data
        self.dataset.prepare_train_data = self._prepare_train_data
        self.dataset._rand_another = self._replacement
        self.original = iter(original_loader(cfg, self.dataset, seed))
        self.dali = build_loader(cfg, data_root, rank=0, world_size=1, seed=seed, **dali_overrides)

    def _prepare_train_data(self, index: int) -> dict | None:
        import random

        import projects.mmdet3d_plugin.datasets.nuscenes_dataset as module

        if not self._shuffles:
            raise ReplayError(f"the original sampler asked for frame {index} beyond the batch")
        module.random = ReplayShuffle(self._shuffles.pop(0))
        before = len(self.replay.used)
        try:
            sample = self._prepare(index)
        finally:
            module.random = random
        self._calls.append((index, sample is not None, len(self.replay.used) - before))
        return sample

    def _replacement(self, index: int) -> int:
        """``_rand_another``: the DALI sample's next replacement, if upstream's pool holds it."""
        if not self._replacements:
            raise ReplayError(f"upstream refused frame {index}, the DALI loader kept it")
        nxt = self._replacements.pop(0)
        pool = np.where(self.dataset.flag == self.dataset.flag[index])[0]
        if nxt not in pool:
            raise ReplayError(f"DALI replaced frame {index} by {nxt}, outside upstream's pool")
        return nxt

    def __iter__(self) -> Iterator[BatchPair]:
        return self

    def __next__(self) -> BatchPair:
        from dali_streampetr import to_collated

        iteration = self.dali.iteration
        batch = next(self.dali)
        self._shuffles, self._replacements, self._calls = [], [], []
        self.replay.draws, self.replay.used = [], []
        for sample in batch["dali"]:
            rejected = list(sample["rejected"])
            self._shuffles += list(sample["shuffles"]) or [()]
            self._replacements += [*rejected[1:], sample["index"]] if rejected else []
            kept = [f["draw"] for f in sample["frames"]]
            # a refused queue runs the pipeline too (its output is dropped): any valid draw serves
            self.replay.draws += [kept[-1]] * (len(kept) * len(rejected)) + kept
        original = next(self.original)
        if self._shuffles or self._replacements or self.replay.draws:
            raise ReplayError("the original batch used fewer samples or frames than the DALI batch")
        accepted, used, pos = [], [], 0
        for index, ok, n in self._calls:
            pos += n
            if ok:
                accepted.append(index)
                used.append(self.replay.used[pos - 1])  # the sample's own (last) frame
        return BatchPair(
            iteration=iteration,
            dali=batch,
            dali_collated=to_collated(batch),
            original=original,
            dali_indices=[r["index"] for r in batch["dali"]],
            original_indices=accepted,
            used_draws=used,
        )

    def close(self) -> None:
        self.dali.close()
