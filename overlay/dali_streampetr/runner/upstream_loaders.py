"""Upstream's loader path as the patched plugin files and ``tools/`` take it: the evaluation loader
(:func:`build_val_loader`), the scene shard of the plugin's ``DistributedSampler``
(:func:`scene_shard`), the training ``build_dataloader`` options (:func:`loading_options`) and the
runner hooks a ready training loader brings (:func:`register_loader_hooks`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mmcv.runner import get_dist_info

from ..sampling.eval_shards import UPSTREAM, part_line, scene_shards, sharding_of
from ..settings import uses_dali


def sharded_sampler(sampler_cfg: Any, sharding: str) -> Any:
    """The ``nonshuffler_sampler`` config that splits by ``sharding``: ``'upstream'`` keeps
    ``sampler_cfg`` (the sampler gets upstream's arguments, any sampler); ``'scenes'`` adds
    ``sharding`` for the plugin's ``DistributedSampler`` (its default when ``sampler_cfg`` is None)."""
    if sharding == UPSTREAM:
        return sampler_cfg
    base = sampler_cfg if sampler_cfg is not None else dict(type="DistributedSampler")
    return dict(base, sharding=sharding)


def print_part(loader: Any, sharding: str, size: int) -> None:
    """This rank's part of the evaluated set, one line (both test loaders split by ``sharding``)."""
    print(part_line(*get_dist_info(), sharding, list(loader.sampler), size), flush=True)


def build_val_loader(
    cfg: Any, val_dataset: Any, distributed: bool, samples_per_gpu: int, split: str = "val"
) -> Any:
    """The evaluation loader over ``val_dataset`` of ``data.<split>`` (``val``: ``--validate``'s;
    ``test``: ``tools/test.py``'s): the DALI test loader with ``uses_dali(cfg, split)``, else
    upstream's DataLoader split by :func:`sharding_of`; a distributed run prints each rank's part."""
    if uses_dali(cfg, split):
        from .dataloader import build_dali_loader

        loader = build_dali_loader(cfg, split, val_dataset)
    else:
        from projects.mmdet3d_plugin.datasets.builder import build_dataloader

        loader = build_dataloader(
            val_dataset,
            samples_per_gpu=samples_per_gpu,
            workers_per_gpu=cfg.data.workers_per_gpu,
            dist=distributed,
            shuffle=False,
            nonshuffler_sampler=sharded_sampler(cfg.data.nonshuffler_sampler, sharding_of(cfg)),
        )
    if distributed:
        print_part(loader, sharding_of(cfg), len(loader.dataset))
    return loader


def scene_shard(dataset: Any, num_replicas: int, rank: int, sharding: str, shuffle: bool) -> Sequence[int]:
    """The plugin ``DistributedSampler``'s frames of ``rank`` under ``sharding='scenes'``: whole
    scenes per rank, no padding (:func:`..sampling.eval_shards.scene_shards` over the dataset's
    ``scene_token``). ``'upstream'`` (the contiguous chunks) is the sampler's own."""
    if sharding != "scenes":
        raise ValueError(f"sharding={sharding!r}: 'scenes' or 'upstream'")
    assert not shuffle, "sharding='scenes' is the test order (shuffle=False)"
    scenes = [info["scene_token"] for info in dataset.data_infos]
    return scene_shards(scenes, num_replicas)[rank]


def loading_options(cfg: Any) -> dict[str, bool]:
    """``build_dataloader``'s ``replicate_dataset_per_gpu`` and ``offset_order_per_rank`` from the
    config's ``data_loading_config`` (both False by default: upstream's samplers)."""
    loading = cfg.get("data_loading_config", {})
    return {
        "replicate_dataset_per_gpu": loading.get("replicate_dataset_per_gpu", False),
        "offset_order_per_rank": loading.get("offset_order_per_rank", False),
    }


def register_loader_hooks(runner: Any, loaders: Iterable[Any]) -> None:
    """Register the runner hooks a ready loader brings as ``(hook, priority)`` pairs in its
    ``runner_hooks`` (the DALI loader: its stream position in checkpoints); before a resume."""
    for loader in loaders:
        for hook, priority in getattr(loader, "runner_hooks", ()):
            runner.register_hook(hook, priority=priority)
