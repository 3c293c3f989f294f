"""The test split (``--split test``): every test batch of the DALI test loader against upstream's test
DataLoader (both as ``tools/test.py`` builds them), field by field, on each rank of several world sizes."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from .compare import BatchComparator
from .original import read_config

ANN_VAL = "nuscenes2d_temporal_infos_val.pkl"
WORLD_SIZES = (1, 2, 3)


def load_test_config(config: str, data_root: Path):
    """The mmcv ``Config`` with ``data.test`` pointed at ``data_root``'s val infos, as ``tools/test.py``
    leaves it (``test_mode=True``, ``samples_per_gpu`` popped)."""
    cfg = read_config(config)
    root = Path(data_root).resolve()
    cfg.data.test.data_root = f"{root}/"
    cfg.data.test.ann_file = str(root / ANN_VAL)
    cfg.data.test.test_mode = True
    cfg.data.test.pop("samples_per_gpu", None)
    return cfg


def original_test_loader(dataset: Any, rank: int, world_size: int):
    """Upstream's test DataLoader of rank ``rank`` of ``world_size`` (the plugin's ``build_dataloader``
    with ``dist=True, shuffle=False``; no worker processes: the same batches, in this process)."""
    from mmcv.parallel import collate
    from projects.mmdet3d_plugin.datasets.samplers.distributed_sampler import DistributedSampler
    from torch.utils.data import DataLoader

    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False, seed=0)
    return DataLoader(dataset, batch_size=1, sampler=sampler, num_workers=0,
                      collate_fn=functools.partial(collate, samples_per_gpu=1), pin_memory=False)  # fmt: skip


def compare_test_split(
    config: str, data_root: Path, world_sizes: tuple[int, ...] = WORLD_SIZES, *, image_path: str = "exact"
) -> dict[str, Any]:
    """One record: per world size the per-rank index lists of both sides and whether they agree;
    the structure differences and field statistics over every batch of every rank."""
    from dali_streampetr import (
        SkippedImages,
        UnsupportedConfigError,
        build_loader,
        loader_config_from,
        to_eval_collated,
    )
    from mmdet3d.datasets import build_dataset

    cfg = load_test_config(config, data_root)
    try:
        settings = loader_config_from(cfg, "test", image_path=image_path)
    except UnsupportedConfigError as exc:
        return {"config": config, "split": "test", "refused": str(exc), "ok": True}
    dataset = build_dataset(cfg.data.test)
    size = len(dataset)
    comparator = BatchComparator(settings.std)
    orders: dict[str, Any] = {}
    for world in world_sizes:
        parts_dali, parts_orig = [], []
        for rank in range(world):
            original = original_test_loader(dataset, rank, world)
            parts_orig.append(list(original.sampler))
            skipped = SkippedImages(to_eval_collated)
            got = []
            with build_loader(cfg, split="test", rank=rank, world_size=world, collate=skipped,
                              image_path=image_path) as loader:  # fmt: skip
                batches = iter(loader)
                for step, theirs in enumerate(original):
                    ours = next(batches)
                    got.append(loader.planner.plan(step)[0].index)
                    comparator.compare(ours, theirs, f"world {world} rank {rank} step {step}")
                try:  # next(), not a for loop: iter() of the loader starts a new pass
                    next(batches)
                    comparator.structure.append(
                        f"world {world} rank {rank}: a DALI batch after the original's end"
                    )
                except StopIteration:
                    pass
            parts_dali.append(got)
        gathered = [i for part in parts_dali for i in part][:size]
        orders[str(world)] = {
            "dali": parts_dali,
            "original": parts_orig,
            "same": parts_dali == parts_orig,
            "gathered_is_every_frame_once": gathered == list(range(size)),
        }
    ok = comparator.ok() and all(o["same"] and o["gathered_is_every_frame_once"] for o in orders.values())
    return {
        "config": config,
        "split": "test",
        "frames": size,
        "orders": orders,
        "fields": {name: s.summary() for name, s in comparator.fields.items()},
        "structure_diffs": comparator.structure,
        "ok": ok,
    }


def render_test_split(record: dict[str, Any]) -> str:
    """A short text table of one record."""
    if "refused" in record:
        return f"refused: {record['refused']}"
    lines = [f"{record['config']}: {record['frames']} test frames"]
    for world, o in record["orders"].items():
        same = "same" if o["same"] else "DIFFERENT"
        once = o["gathered_is_every_frame_once"]
        lines.append(
            f"  world size {world}: per-rank order {same} {o['dali']}; gathered = every frame once: {once}"
        )
    lines.append("| field | max abs diff | mean abs diff | tolerance | ok |")
    lines.append("|---|---|---|---|---|")
    for name, s in record["fields"].items():
        if s["kind"] == "image":
            tol = f"mean <= {s['tolerance']['mean_abs']}, p99.9 <= {s['tolerance']['p99_9']} per image"
            extra = f" (PSNR {s['psnr_db']:.1f} dB, worst image mean {s['worst_image_mean_abs']:.3f})"
        else:
            tol, extra = f"max <= {s['tolerance']['max_abs']:g}", ""
        lines.append(f"| {name} | {s['max_abs']:.3g} | {s['mean_abs']:.3g}{extra} | {tol} | "
                     f"{'yes' if s['ok'] else 'NO'} |")  # fmt: skip
    lines += [f"  structure: {d}" for d in record["structure_diffs"][:20]] or ["  structure: identical"]
    return "\n".join(lines)
