"""Where each loader spends its CPU time: ``python -m loaderbench.analysis.cpu_split [--loader dali|torch]
[--profile r50|eval] [--threads T] [--batches N] [KEY=VALUE ...]``.

DALI: CPU ms per batch of each thread (``main:`` / ``child:<thread name>``); torch: CPU ms per sample
of each transform of upstream's pipeline. A one-off analysis (the upstream env).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..measure.proctree import thread_cpu_seconds


def split(before: dict, after: dict, main_pid: int) -> dict[str, float]:
    """CPU seconds per ``main:<thread name>`` / ``child:<thread name>`` between two snapshots of
    :func:`.proctree.thread_cpu_seconds` (threads that started in between count from zero)."""
    out: dict[str, float] = {}
    for key, seconds in after.items():
        name = ("main:" if key[0] == main_pid else "child:") + key[2]
        out[name] = out.get(name, 0.0) + seconds - before.get(key, 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="loaderbench.analysis.cpu_split", description=__doc__.split("\n\n")[0])
    ap.add_argument("--loader", default="dali", choices=("dali", "torch"))
    ap.add_argument("--profile", default="r50", choices=("r50", "eval"))
    ap.add_argument("--threads", type=int, default=1, help="DALI CPU threads (default 1)")
    ap.add_argument("--batches", type=int, default=40, help="measured batches (default 40)")
    ap.add_argument("--data-root", type=Path, help="default: the synthetic data set")
    ap.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="loader settings, e.g. image_path=fast")
    args = ap.parse_args(argv)
    from ..sweep.cases import Case, build, default_data_root, enter_checkout, load_config, parse_override

    data_root = (args.data_root or default_data_root()).resolve()
    enter_checkout()
    if args.loader == "torch":
        return transform_split(load_config(args.profile, data_root), args.profile, args.batches)
    case = Case(args.profile, "dali", threads=args.threads)
    overrides = dict(map(parse_override, args.overrides))
    loader = build(case, load_config(args.profile, data_root), data_root, **overrides)
    batches = iter(loader)
    for _ in range(5):
        next(batches)
    before, t0 = thread_cpu_seconds(), time.perf_counter()
    for _ in range(args.batches):
        next(batches)
    wall, per = (time.perf_counter() - t0) / args.batches, split(before, thread_cpu_seconds(), os.getpid())
    print(f"{case.name} {' '.join(args.overrides)}: {wall * 1000:.0f} ms/batch, "
          f"{sum(per.values()) / args.batches * 1000:.1f} CPU-ms/batch")  # fmt: skip
    for name, seconds in sorted(per.items(), key=lambda kv: -kv[1]):
        if seconds > 0:
            print(f"  {name:28s} {seconds / args.batches * 1000:7.1f} CPU-ms/batch")
    sys.stdout.flush()
    os._exit(0)  # the loader's workers and DALI's threads: no orderly teardown needed for a one-off


def transform_split(cfg: object, profile: str, samples: int) -> int:
    """Print CPU ms per sample of each transform of upstream's pipeline (see the module doc)."""
    import projects.mmdet3d_plugin  # noqa: F401  (registers the plugin's datasets and transforms)
    from mmdet3d.datasets import build_dataset

    dataset = build_dataset(cfg.data.test if profile == "eval" else cfg.data.train)
    samples = min(samples, len(dataset))
    per: dict[str, float] = {}
    whole = 0.0
    for i in range(samples):
        results = dataset.get_data_info(i)
        dataset.pre_pipeline(results)
        for transform in dataset.pipeline.transforms:
            t0 = time.process_time()
            results = transform(results)
            name = type(transform).__name__
            per[name] = per.get(name, 0.0) + time.process_time() - t0
        t0 = time.process_time()
        dataset[i]
        whole += time.process_time() - t0
    mean_ms = whole / samples * 1000
    print(f"{profile}/torch pipeline, {samples} samples: {mean_ms:.1f} CPU-ms/sample in __getitem__")
    for name, seconds in per.items():
        print(f"  {name:34s} {seconds / samples * 1000:7.1f} CPU-ms/sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
