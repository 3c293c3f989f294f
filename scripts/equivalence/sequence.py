"""Sequence order: the frames and ``prev_exists`` each batch slot gets, from the real
``InfiniteGroupEachSampleInBatchSampler`` (built by the plugin's ``build_dataloader`` as rank r of W)
and from the DALI loader's planner, with ``replicate_dataset_per_gpu`` off (the ranks share out the
sequence groups) and on, with and without ``offset_order_per_rank``. No images are read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice, product
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def as_rank(rank: int, world_size: int) -> Iterator[None]:
    """Make the plugin's ``build_dataloader`` see ``(rank, world_size)`` (no process group needed:
    the sampler's seed sync reads the real, uninitialised group and keeps the seed)."""
    from projects.mmdet3d_plugin.datasets import builder

    saved = builder.get_dist_info
    builder.get_dist_info = lambda: (rank, world_size)
    try:
        yield
    finally:
        builder.get_dist_info = saved


SEQ_SAMPLER = {"type": "InfiniteGroupEachSampleInBatchSampler"}
ITER_RUNNER = {"type": "IterBasedRunner"}


class FlagsOnly:
    """A stand-in data set for the sampler: only ``flag`` (group id per frame) and ``len``."""

    def __init__(self, flags: Any) -> None:
        import numpy as np

        self.flag = np.asarray(flags, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.flag)

    def __getitem__(self, index: int) -> int:
        return index


@dataclass(frozen=True)
class Run:
    """One rank's view of a distributed run: who it is, the seed, how the ranks split the data (the
    two ``data_loading_config`` keys) and how many iterations to compare."""

    rank: int
    world_size: int
    seed: int
    replicate_dataset_per_gpu: bool
    offset_order_per_rank: bool
    iters: int

    def split(self) -> dict[str, bool]:
        return {
            "replicate_dataset_per_gpu": self.replicate_dataset_per_gpu,
            "offset_order_per_rank": self.offset_order_per_rank,
        }


def rank_loader(dataset: Any, samples_per_gpu: int, run: Run, sampler: dict, runner: dict, **split: bool):
    """The DataLoader the plugin's ``build_dataloader`` builds for one rank with this sampler and runner."""
    from projects.mmdet3d_plugin.datasets.builder import build_dataloader

    with as_rank(run.rank, run.world_size):
        return build_dataloader(
            dataset, samples_per_gpu, 0, 1, dist=True, seed=run.seed, shuffler_sampler=sampler,
            nonshuffler_sampler={"type": "DistributedSampler"}, runner_type=runner, **split,
        )  # fmt: skip


def original_indices(dataset: Any, samples_per_gpu: int, run: Run) -> list[list[int]]:
    """``run.iters`` batches of dataset indices from the original sampler of one rank, as the plugin's
    ``build_dataloader`` builds it for a seq config (IterBasedRunner + the infinite group sampler)."""
    loader = rank_loader(dataset, samples_per_gpu, run, SEQ_SAMPLER, ITER_RUNNER, **run.split())
    return [list(batch) for batch in islice(iter(loader.batch_sampler), run.iters)]


def original_stream(cfg: Any, dataset: Any, run: Run) -> list[list[tuple[int, bool]]]:
    """``run.iters`` batches of (dataset index, prev_exists from ``get_data_info``) of the real data set."""
    batches = original_indices(dataset, cfg.data.samples_per_gpu, run)
    prev = [bool(dataset.get_data_info(i)["prev_exists"]) for i in range(len(dataset))]
    return [[(i, prev[i]) for i in batch] for batch in batches]


def dali_stream(cfg: Any, data_root: Path, run: Run) -> list[list[tuple[int, bool]]]:
    """The same from the DALI loader's own planner (its pipeline is never started)."""
    from dali_streampetr import build_loader

    where = {"rank": run.rank, "world_size": run.world_size, "seed": run.seed}
    loader = build_loader(cfg, data_root, **where, **run.split())
    return [[(p.index, p.prev_exists) for p in loader.planner.plan(it)] for it in range(run.iters)]


def compare_streams(
    cfg: Any,
    dataset: Any,
    data_root: Path,
    *,
    world_sizes: tuple[int, ...] = (1, 2, 4),
    splits: tuple[tuple[bool, bool], ...] = ((False, False), (True, False), (True, True)),
    seed: int = 0,
    iters: int = 32,
) -> list[dict[str, Any]]:
    """One record per (split, world size, rank): equal or not, and the first differing iteration. A
    split is ``(replicate_dataset_per_gpu, offset_order_per_rank)``. Configurations the original
    sampler refuses (too few groups) must be refused by DALI too."""
    rows = []
    for run in runs(splits, world_sizes, seed, iters):
        row: dict[str, Any] = {
            **run.split(),
            "world_size": run.world_size,
            "rank": run.rank,
            "iterations": iters,
        }
        try:
            want = original_stream(cfg, dataset, run)
        except AssertionError:
            want = None
        try:
            got = dali_stream(cfg, data_root, run)
        except ValueError:
            got = None
        if want is None or got is None:
            refused = {"original": want is None, "dali": got is None}
            row.update(equal=want is None and got is None, refused=refused)
        else:
            diff = first_diff(got, want)
            row.update(equal=diff is None, first_diff=diff, frames=sum(len(b) for b in want))
        rows.append(row)
    return rows


def runs(
    splits: Iterable[tuple[bool, bool]], world_sizes: tuple[int, ...], seed: int, iters: int
) -> Iterator[Run]:
    """Every rank of every world size, per split ``(replicate_dataset_per_gpu, offset_order_per_rank)``."""
    for (replicate, offset), world_size in product(splits, world_sizes):
        yield from (Run(rank, world_size, seed, replicate, offset, iters) for rank in range(world_size))


def first_diff(got: list, want: list) -> int | None:
    return next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)


GROUP_SAMPLER = {"type": "DistributedGroupSampler"}
EPOCH_RUNNER = {"type": "EpochBasedRunner"}


def original_epoch_indices(dataset: Any, samples_per_gpu: int, run: Run, epochs: int) -> list[list[int]]:
    """The batches of ``epochs`` epochs from upstream's ``DistributedGroupSampler`` of one rank, as
    the plugin's ``build_dataloader`` builds it (``set_epoch`` before each, as mmcv's runners do)."""
    replicate = run.replicate_dataset_per_gpu
    loader = rank_loader(
        dataset, samples_per_gpu, run, GROUP_SAMPLER, EPOCH_RUNNER, replicate_dataset_per_gpu=replicate
    )
    batches = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        order = list(iter(loader.sampler))
        batches += [order[i : i + samples_per_gpu] for i in range(0, len(order), samples_per_gpu)]
    return batches


def compare_epoch_streams(
    cfg: Any,
    dataset: Any,
    data_root: Path,
    *,
    world_sizes: tuple[int, ...] = (1, 2, 4),
    seed: int = 0,
    epochs: int = 3,
) -> list[dict[str, Any]]:
    """For the epoch-based modes: one record per (split, world size, rank) comparing ``epochs`` epochs
    of upstream's sampler with the DALI loader's (sampled indices, before any replacement)."""
    from dali_streampetr import build_loader

    rows = []
    for run in runs(((False, False), (True, False)), world_sizes, seed, 0):
        want = original_epoch_indices(dataset, cfg.data.samples_per_gpu, run, epochs)
        where = {"rank": run.rank, "world_size": run.world_size, "seed": seed}
        loader = build_loader(
            cfg, data_root, **where, replicate_dataset_per_gpu=run.replicate_dataset_per_gpu
        )
        diff = first_diff([loader.sampler.batch(i) for i in range(len(want))], want)
        rows.append({**run.split(), "world_size": run.world_size, "rank": run.rank, "iterations": len(want),
                     "equal": diff is None and len(loader) * epochs == len(want), "first_diff": diff,
                     "frames": sum(len(b) for b in want)})  # fmt: skip
    return rows
