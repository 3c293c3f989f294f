"""Run the whole comparison for one config: batches field by field, sequence order, draw
distributions. Returns one JSON-able record with ``ok``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .compare import BatchComparator
from .draws import compare_draws, dali_draws, upstream_draws
from .fast_path import FastImageRow
from .lockstep import LockStep
from .original import load_config, original_dataset
from .sequence import compare_epoch_streams, compare_streams


def pad_threshold(loader_cfg: Any) -> float:
    """Resize ratios below this leave the crop wider than the resized image: upstream pads the right
    side black (fW / W: 0.44 for 704 of 1600, 0.5 for 800)."""
    return loader_cfg.aug.final_dim[1] / loader_cfg.aug.W


def draw_cases(loader_cfg: Any, seed: int, batches: int, batch_size: int) -> set[tuple[bool, bool]]:
    """The (flip, padded) combinations among the DALI draws of the first ``batches`` iterations."""
    from dali_streampetr.toolkit import frame_draw

    fW = loader_cfg.aug.final_dim[1]
    draws = [frame_draw(loader_cfg.aug, seed, 0, it, s) for it in range(batches) for s in range(batch_size)]
    return {(d.flip, d.resize_dims[0] < fW) for d in draws}


def covering_seed(loader_cfg: Any, batches: int, batch_size: int, start: int = 0, tries: int = 1000) -> int:
    """The smallest seed >= ``start`` whose first batches hold all four of flip / no flip x padded /
    not padded (if ``batches * batch_size`` >= 4), else the most combinations found."""
    best, best_n = start, -1
    for seed in range(start, start + tries):
        n = len(draw_cases(loader_cfg, seed, batches, batch_size))
        if n > best_n:
            best, best_n = seed, n
        if n == min(4, batches * batch_size):
            break
    return best


def frame_record(pair: Any, slot: int, loader_cfg: Any) -> dict[str, Any]:
    draw = pair.dali["dali"][slot]["draw"]
    return {
        "iteration": pair.iteration,
        "slot": slot,
        "index": pair.dali_indices[slot],
        "token": pair.dali["dali"][slot]["token"],
        "prev_exists": bool(pair.dali["prev_exists"][slot, -1]),  # the sample's own (last) frame
        "padded": draw.resize_dims[0] < loader_cfg.aug.final_dim[1],
        "draw": draw.as_dict(),
        "upstream_used": {
            k: [[w, float(v) if isinstance(v, float) else str(v)] for w, v in log]
            for k, log in pair.used_draws[slot].items()
        },  # fmt: skip
    }


def compare_batches(
    cfg: Any, loader_cfg: Any, data_root: Path, *, batches: int, seed: int, fast: bool = True, log=print
) -> dict:
    """Step both loaders ``batches`` times with the DALI draws replayed into the original; compare.
    With ``fast``, the fast image path too, as a row of its own (:mod:`.fast_path`)."""
    B = cfg.data.samples_per_gpu
    comparator = BatchComparator(loader_cfg.std)
    frames, order = [], []
    steps = LockStep(cfg, data_root, seed=seed)
    fast_row = FastImageRow(cfg, data_root, seed, loader_cfg.std) if fast else None
    try:
        for _ in range(batches):
            pair = next(steps)
            order.append(
                {"iteration": pair.iteration, "dali": pair.dali_indices, "original": pair.original_indices}
            )
            comparator.add(pair.dali_collated, pair.original, f"batch {pair.iteration}")
            if fast_row:
                fast_row.add(pair, f"batch {pair.iteration}")
            frames.extend(frame_record(pair, s, loader_cfg) for s in range(B))
            log(f"  batch {pair.iteration}: frames {pair.dali_indices} (original {pair.original_indices})")
    finally:
        steps.close()
        if fast_row:
            fast_row.close()
    record = comparator.summary()
    record["frames"] = frames
    record["cases"] = sorted({f"{'flip' if f['draw']['flip'] else 'no flip'} + "
                              f"{'padded' if f['padded'] else 'not padded'}" for f in frames})  # fmt: skip
    record["batch_order"] = {"equal": all(o["dali"] == o["original"] for o in order), "batches": order}
    record["ok"] = bool(record["ok"] and record["batch_order"]["equal"])
    if fast_row:
        record["fast_image_path"] = fast_row.summary()
        record["ok"] = bool(record["ok"] and record["fast_image_path"]["ok"])
    return record


def run_config(
    config: str,
    data_root: Path,
    *,
    batches: int = 4,
    seed: int | None = None,
    samples_per_gpu: int | None = None,
    sequence_iters: int = 24,
    draws: int = 2000,
    log=print,
) -> dict[str, Any]:
    """Compare ``batches`` batches of both loaders on ``config`` (``r50``, ``vov`` or a path), the
    sequence order and ``draws`` draws per side; ``seed=None``: the first seed covering flip x padding."""
    from dali_streampetr import UnsupportedConfigError, loader_config_from
    from dali_streampetr.toolkit import declared_mode

    t0 = time.perf_counter()
    cfg = load_config(config, data_root, samples_per_gpu)
    try:
        loader_cfg = loader_config_from(cfg)
    except UnsupportedConfigError as exc:  # refused by name: handled, nothing to compare
        return {"config": config, "mode": declared_mode(cfg), "refused": str(exc), "ok": True,
                "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    if seed is None:
        seed = covering_seed(loader_cfg, batches, cfg.data.samples_per_gpu)
    record: dict[str, Any] = {
        "config": config,
        "mode": loader_cfg.mode.name,
        "data_root": str(data_root),
        "seed": seed,
        "batches": batches,
        "samples_per_gpu": cfg.data.samples_per_gpu,
        "final_dim": list(loader_cfg.aug.final_dim),
        "to_rgb": loader_cfg.to_rgb,
        "pad_below_resize": pad_threshold(loader_cfg),
    }
    record.update(compare_batches(cfg, loader_cfg, data_root, batches=batches, seed=seed, log=log))
    if loader_cfg.mode.epoch_based:
        sequence = compare_epoch_streams(cfg, original_dataset(cfg), data_root, seed=seed)
    else:
        sequence = compare_streams(cfg, original_dataset(cfg), data_root, seed=seed, iters=sequence_iters)
    record["sequence"] = {"equal": all(r["equal"] for r in sequence), "runs": sequence}
    record["draws"] = compare_draws(
        dali_draws(loader_cfg, draws, seed, cfg.data.samples_per_gpu),
        upstream_draws(cfg, draws, seed),
        pad_threshold(loader_cfg),
    )
    draws_ok = all(v["ok"] for k, v in record["draws"].items() if k != "n")
    record["ok"] = bool(record["ok"] and record["sequence"]["equal"] and draws_ok)
    record["seconds"] = round(time.perf_counter() - t0, 1)
    return record
