"""Test shards at nuScenes val size: ``python -m loaderbench --case shards [--frames N] [--ranks 2,4,...]``.

Per K ranks, upstream's chunks vs whole scenes on the scene column of a val-size replica (or of
``--infos FILE``): rank sizes, empty ranks, frames run twice, scenes cut, frames without their scene's
memory (docs/benchmark.md). Writes ``<out>/shards.json`` + ``.png``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..results.outputs import write
from ..sweep.cases import ROOT
from .replica import replicate_infos

NUSCENES_VAL = 6019


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="loaderbench --case shards", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=NUSCENES_VAL, help="replica size (default 6019)")
    ap.add_argument("--samples-per-scene", type=int, default=40, help="frames of the replicated scene (40)")
    ap.add_argument("--ranks", default="2,4,8,16,32", help="comma list of world sizes (default 2,4,8,16,32)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench-shards", help="output folder")
    ap.add_argument("--infos", type=Path, help="an info file to read instead of the replica (e.g. real val)")
    ap.add_argument("--data-root", type=Path, help="the images of --infos (nox passes the embedded set)")
    args = ap.parse_args(argv)
    args.ranks = [int(k) for k in args.ranks.split(",") if k]
    if args.frames < 1 or args.samples_per_scene < 1 or not args.ranks or min(args.ranks) < 1:
        ap.error("--frames, --samples-per-scene and every --ranks value must be >= 1")
    return args


def scene_column(args: argparse.Namespace, out: Path) -> np.ndarray:
    """The scene column of the frame store of ``--infos``, else of the ``--frames`` replica (stores
    under ``out``)."""
    os.environ["STREAMPETR_DALI_FRAME_STORES"] = str(out / "frame-stores")
    from dali_streampetr import loader_config_from
    from dali_streampetr.toolkit import load_frames

    if args.infos:
        infos, root = args.infos.resolve(), (args.data_root or args.infos.parent).resolve()
    else:
        from synthdata import ensure_dataset

        root = ensure_dataset(scenes=2, samples_per_scene=args.samples_per_scene, seed=0)  # 1 train scene
        src = root / "nuscenes2d_temporal_infos_train.pkl"
        infos = replicate_infos(src, out / f"infos_{args.frames}.pkl", args.frames)
    store = load_frames(infos, root, loader_config_from({}).class_names)  # nuScenes' classes
    return np.asarray(store.columns["scene_token"])


def best_largest_rank(lengths: np.ndarray, world_size: int) -> int:
    """The smallest largest rank any split of these scenes into ``world_size`` contiguous runs of whole
    scenes can have (bisection over the bound; a greedy fill checks each), the reference the
    nearest-boundary split is held against."""

    def fits(bound: int) -> bool:
        ranks, load = 1, 0
        for n in lengths.tolist():
            if load + n > bound:
                ranks, load = ranks + 1, 0
            load += n
        return ranks <= world_size

    lo, hi = int(lengths.max(initial=0)), int(lengths.sum())
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
    return lo


def shard_stats(scene_ids: np.ndarray, world_size: int) -> dict[str, dict[str, Any]]:
    """Per sharding: frames per rank (largest, mean, smallest), empty ranks, frames run twice, scenes
    cut and the frames whose kept result lacks its scene's earlier frames."""
    from dali_streampetr.toolkit import frames_without_memory, scene_shards, scene_starts, upstream_chunks

    n = len(scene_ids)
    starts = set(scene_starts(scene_ids).tolist())
    out = {}
    for name, shards in (
        ("upstream", upstream_chunks(n, world_size)),
        ("scenes", scene_shards(scene_ids, world_size)),
    ):
        sizes = [len(s) for s in shards]
        out[name] = {
            "max": max(sizes),
            "mean": sum(sizes) / world_size,
            "min": min(sizes),
            "empty_ranks": sizes.count(0),
            "run_twice": sum(sizes) - n,
            "scenes_cut": sum(1 for s in shards if len(s) and s[0] not in starts),
            "frames_without_memory": len(frames_without_memory(scene_ids, shards)),
        }
    return out


def table(result: dict[str, Any]) -> str:
    lines = [
        "| K | ideal N/K | upstream: frames per rank (max = mean) | run twice | scenes cut | frames without "
        "their scene's memory | scenes: max / mean / min | empty ranks | best whole-scene split: max | "
        "bound N/K + longest scene |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        up, sc = row["upstream"], row["scenes"]
        scenes = f"{sc['max']} / {sc['mean']:.1f} / {sc['min']}"
        lines.append(
            f"| {row['ranks']} | {result['frames'] / row['ranks']:.1f} | {up['max']} | {up['run_twice']} | "
            f"{up['scenes_cut']} | {up['frames_without_memory']} | {scenes} | {sc['empty_ranks']} | "
            f"{row['best_largest_rank']} | {row['bound']:.1f} |"
        )
    return "\n".join(lines)


def chart(result: dict[str, Any], path: Path) -> None:
    """Left: the largest rank over the ideal share N/K per K (both shardings, and the best whole-scene
    split); right: upstream's frames without their scene's memory, as a share of the set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, n = result["rows"], result["frames"]
    ks = [row["ranks"] for row in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for label, values, style in (
        ("upstream's chunks", [row["upstream"]["max"] for row in rows], "o-"),
        ("whole scenes (nearest boundary)", [row["scenes"]["max"] for row in rows], "o-"),
        ("best whole-scene split", [row["best_largest_rank"] for row in rows], "x:"),
    ):
        left.plot(ks, [v * row["ranks"] / n for v, row in zip(values, rows, strict=True)], style, label=label)
    left.set_ylabel("largest rank / (N / K)")
    left.set_title("frames on the largest rank (the pass's time)", fontsize=10)
    right.bar([str(k) for k in ks], [100 * row["upstream"]["frames_without_memory"] / n for row in rows],
              color="#d9822b", label="upstream's chunks (whole scenes: none)")  # fmt: skip
    right.set_ylabel("% of the frames")
    right.set_title("frames evaluated without their scene's earlier frames", fontsize=10)
    for ax in (left, right):
        ax.set_xlabel("ranks K")
        ax.legend(fontsize=8)
    left.set_xscale("log", base=2)
    left.set_xticks(ks, [str(k) for k in ks])
    fig.suptitle(f"Test shards of {n} frames, {result['scenes']} scenes", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    ids = scene_column(args, out)
    from dali_streampetr.toolkit import scene_starts

    lengths = np.diff(scene_starts(ids))
    result = {
        "frames": len(ids),
        "scenes": len(lengths),
        "scene_lengths": {
            str(k): int(v) for k, v in zip(*np.unique(lengths, return_counts=True), strict=True)
        },
        "rows": [
            {
                "ranks": k,
                "bound": len(ids) / k + int(lengths.max()),
                "best_largest_rank": best_largest_rank(lengths, k),
                **shard_stats(ids, k),
            }
            for k in args.ranks
        ],
    }
    js, png = write(result, out, "shards", chart)
    print(
        f"shards: {result['frames']} frames, {result['scenes']} scenes (lengths: {result['scene_lengths']})"
    )
    print(table(result))
    print(f"shards: {js}, {png}")
    return 0
