"""Which thread of the DALI loader spends its CPU time: ``python -m loaderbench.thread_split
[--profile r50|eval] [--threads T] [--batches N] [-- KEY=VALUE ...]``.

Builds the profile's DALI loader as ``nox -s bench`` does (the synthetic data set, the pinned
config), takes a few untimed batches, then prints CPU ms per batch of each thread name over
``--batches`` batches: in the training process DALI's executor (``[DALI] Executor``: the CPU
decoder runs there) and its pool threads (``[DALI][TPk]Exec``: resize, pad, normalise), the
external source's worker process (``child``), and the training process's own Python threads.
One-off analysis (scripts/ and overlay/ on PYTHONPATH, the upstream env); the bench does not run it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .proctree import thread_cpu_seconds


def split(before: dict, after: dict, main_pid: int) -> dict[str, float]:
    """CPU seconds per ``main:<thread name>`` / ``child:<thread name>`` between two snapshots of
    :func:`.proctree.thread_cpu_seconds` (threads that started in between count from zero)."""
    out: dict[str, float] = {}
    for key, seconds in after.items():
        name = ("main:" if key[0] == main_pid else "child:") + key[2]
        out[name] = out.get(name, 0.0) + seconds - before.get(key, 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="loaderbench.thread_split", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="r50", choices=("r50", "eval"))
    ap.add_argument("--threads", type=int, default=1, help="DALI CPU threads (default 1)")
    ap.add_argument("--batches", type=int, default=40, help="measured batches (default 40)")
    ap.add_argument("--data-root", type=Path, help="default: the synthetic data set")
    ap.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="loader settings, e.g. image_path=fast")
    args = ap.parse_args(argv)
    from .__main__ import default_data_root, parse_override
    from .cases import Case, build, enter_checkout, load_config

    data_root = (args.data_root or default_data_root()).resolve()
    enter_checkout()
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


if __name__ == "__main__":
    sys.exit(main())
