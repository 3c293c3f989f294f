"""The DALI loader's uninterrupted stream, without a model:
`python -m upstream_run.stream_reference OUT_DIR --data-root D --world-size W --iters N [--replicate]`.

Runs in the upstream env (needs mmcv). Builds each rank's training loader from the small DALI smoke
config and takes N batches, so that `OUT_DIR/slots_rank<r>.jsonl` hold the slot logs a straight
training run writes; `upstream_run.slots --compare` then checks a resumed run against them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from overlaytool import require_code_root

from .train import CONFIGS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m upstream_run.stream_reference", description=__doc__)
    ap.add_argument("out", type=Path, help="where slots_rank<r>.jsonl go")
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--iters", type=int, required=True)
    ap.add_argument("--replicate", action="store_true", help="data_loading_config.replicate_dataset_per_gpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    tree = require_code_root("upstream_run")
    sys.path.insert(0, str(tree))
    from dali_streampetr import build_dali_loader
    from mmcv import Config

    data = args.data_root.resolve()
    cfg = Config.fromfile(str(tree / CONFIGS["dali"]["small"]))
    cfg.data.train.data_root = f"{data}/"
    cfg.data.train.ann_file = str(data / "nuscenes2d_temporal_infos_train.pkl")
    cfg.data_loading_config.replicate_dataset_per_gpu = args.replicate
    cfg.work_dir, cfg.seed = str(args.out.resolve()), args.seed
    for rank in range(args.world_size):
        loader = build_dali_loader(cfg, "train", rank=rank, world_size=args.world_size)
        for _ in range(args.iters):
            next(loader)
        loader.close()
    print(f"stream_reference: {args.world_size} rank(s) x {args.iters} iterations in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
