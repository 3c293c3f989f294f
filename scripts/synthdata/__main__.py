"""`python -m synthdata --out DIR --scenes N --samples-per-scene M --seed S`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .catalog import MINI_SCENES
from .dataset import DEFAULT_SAMPLES_PER_SCENE, DEFAULT_SCENES, ensure_dataset
from .generate import jpeg_stats


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m synthdata", description=__doc__)
    ap.add_argument("--out", type=Path, default=None, help="data root (default: data/synthetic/<params>/)")
    ap.add_argument("--scenes", type=_positive, default=DEFAULT_SCENES, help=f"1..{len(MINI_SCENES)}")
    ap.add_argument("--samples-per-scene", type=_positive, default=DEFAULT_SAMPLES_PER_SCENE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=_positive, default=None, help="image rendering processes (default: 2)")
    args = ap.parse_args(argv)
    if args.scenes > len(MINI_SCENES):
        ap.error(f"--scenes must be at most {len(MINI_SCENES)} (the official v1.0-mini scenes)")
    if args.seed < 0:
        ap.error("--seed must be >= 0")
    t0 = time.perf_counter()
    root = ensure_dataset(
        args.out, scenes=args.scenes, samples_per_scene=args.samples_per_scene, seed=args.seed, jobs=args.jobs
    )
    stats = jpeg_stats(root)
    print(
        f"synthetic nuScenes data set: {root} ({time.perf_counter() - t0:.1f} s); "
        f"{int(stats['count'])} JPEGs, min/median/max "
        f"{stats['min_kb']:.0f}/{stats['median_kb']:.0f}/{stats['max_kb']:.0f} KB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
