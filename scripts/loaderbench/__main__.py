"""``python -m loaderbench [--data-root DIR] [--batches N] [--repeats R] [--out DIR] ...``
(``--case scale [--frames N] ...``: the loaders at nuScenes size instead, see :mod:`.nuscenes_size.scale`;
``--case eval``: the test loaders of ``tools/test.py``, the ``eval`` profile without variants;
``--case shards``: the test shards of K ranks at nuScenes val size, see :mod:`.nuscenes_size.shards`)

Runs every configuration in its own process (see :mod:`.sweep.runcase`), then the decode floors
(:mod:`.sweep.floor`), and writes ``<out>/bench.json`` + ``<out>/bench.png`` and prints the tables.
Run it in the upstream env with ``scripts`` on ``PYTHONPATH`` (``nox -s bench`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from .results import figures, outputs
from .sweep.cases import ROOT, default_data_root, parse_override, sweep
from .sweep.runcase import batches_for, measure_case, run_json

PACKAGES = (
    "torch",
    "nvidia-dali-cuda120",
    "mmcv-full",
    "mmdet",
    "mmdet3d",
    "numpy",
    "pillow",
    "opencv-python",
)


def has_gpu() -> bool:
    """Whether an NVIDIA GPU is here and torch sees it."""
    if not shutil.which("nvidia-smi"):
        return False
    import torch

    return torch.cuda.is_available()


def meta(args: argparse.Namespace, data_root: Path) -> dict[str, Any]:
    """The run's ``meta`` record: date, host, CPU, cores, Python, package versions, data, arguments."""
    versions = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "versions": versions,
        "data_root": str(data_root),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="loaderbench", description=__doc__.split("\n\n")[1])
    ap.add_argument("--data-root", type=Path, help="data set (default: the synthetic one, made if missing)")
    ap.add_argument("--batches", type=int, default=10, help="timed batches per repeat, r50 (default 10)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, >= 3 for a median (default 3)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed batches first (default 3)")
    ap.add_argument(
        "--rounds", type=int, default=1,
        help="run the sweep this many times, every other round in reverse order, and pool each "
        "configuration's repeats (evens out a host whose speed drifts; default 1)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench", help="output folder")
    ap.add_argument(
        "--profiles", default="r50,accv", help="comma list of r50, accv, 8key, eval (default r50,accv)"
    )
    ap.add_argument("--only", default="", help="run only configurations whose name contains this")
    ap.add_argument("--accv-full", action="store_true", help="sweep accv like r50 (default: 2 cores only)")
    ap.add_argument("--no-variants", action="store_true", help="skip the DALI setting variants")
    ap.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto", help="add DALI on GPU")
    ap.add_argument(
        "--workers", default="", help="DataLoader worker counts for every profile, e.g. 1,2,4,8,16"
    )
    ap.add_argument("--threads", default="", help="DALI thread counts for every profile (and the GPU rows)")
    ap.add_argument("--no-dali-cpu", action="store_true", help="leave out DALI's CPU rows (a GPU sweep)")
    ap.add_argument("--no-floor", action="store_true", help="skip the decode floor")
    ap.add_argument(
        "--dali", action="append", default=[], metavar="KEY=VALUE",
        help="DALI loader override for every DALI configuration (e.g. roi_decode=False); repeatable",
    )  # fmt: skip
    ap.add_argument("--step-s", type=float, default=1.0, help="model step before each timed next() (1.0 s)")
    ap.add_argument(
        "--handover-calls", type=int, default=8,
        help="timed next() calls after a model step, per configuration (default 8; 0: skip)",
    )  # fmt: skip
    ap.add_argument("--stall", action="store_true", help="also the loader-stall measurement (see stall)")
    ap.add_argument("--stall-iters", type=int, default=20, help="training iterations per stall run (20)")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.batches < 1 or args.rounds < 1:
        ap.error("--batches, --repeats and --rounds must be >= 1")
    if args.step_s < 0 or args.handover_calls < 0:
        ap.error("--step-s and --handover-calls must be >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--case" in argv:
        at = argv.index("--case")
        case, rest = argv[at + 1 : at + 2], argv[:at] + argv[at + 2 :]
        if case == ["scale"]:
            from .nuscenes_size.scale import main as scale_main

            return scale_main(rest)
        if case == ["shards"]:
            from .nuscenes_size.shards import main as shards_main

            return shards_main(rest)
        if case == ["eval"]:
            rest = [*rest, "--profiles", "eval", "--no-variants", "--no-floor"]
        elif case != ["sweep"]:
            raise SystemExit(f"loaderbench: --case is sweep (default), scale, shards or eval, got {case}")
        argv = rest
    args = parse_args(argv)
    t_start = time.perf_counter()
    data_root = (args.data_root or default_data_root()).resolve()
    profiles = tuple(p for p in args.profiles.split(",") if p)
    gpu = args.gpu == "yes" or (args.gpu == "auto" and has_gpu())
    overrides = dict(parse_override(o) for o in args.dali)
    info = meta(args, data_root)
    load_start = os.getloadavg()
    print(f"loaderbench: data {data_root}, load average {load_start[0]:.2f}", flush=True)
    counts = {k: tuple(int(n) for n in v.split(",") if n.strip()) or None
              for k, v in (("workers", args.workers), ("threads", args.threads))}  # fmt: skip
    todo = sweep(profiles, gpu, args.accv_full, not args.no_variants, dali_cpu=not args.no_dali_cpu, **counts)
    todo = [c for c in todo if args.only in c.name]
    measured: dict[str, list[dict[str, Any]]] = {case.name: [] for case in todo}
    for round_no in range(args.rounds):
        if args.rounds > 1:
            print(f"round {round_no + 1} of {args.rounds}", flush=True)
        for case in todo if round_no % 2 == 0 else todo[::-1]:
            measured[case.name].append(measure_case(case, args, data_root, overrides))
    cases = []
    for case in todo:
        failed = [r for r in measured[case.name] if "error" in r]
        res = failed[0] if failed else figures.merge_rounds(measured[case.name])
        if not failed:
            res["summary"] = figures.summarise_case(res)
        cases.append(res)
    floors_raw, floors = [], []
    if not args.no_floor:
        for profile in profiles:
            spec = {"profile": profile, "data_root": str(data_root), "warmup": 2,
                    "batches": batches_for(profile, args.batches), "repeats": args.repeats}  # fmt: skip
            res = run_json("loaderbench.sweep.floor", spec)
            if "error" in res:
                print(f"  {profile}/decode-floor FAILED {res['error']}", flush=True)
                continue
            floors_raw.append(res)
            floors += figures.summarise_floor(res)
    stall = None
    if args.stall:
        from .analysis.stall import run_stall

        stall = run_stall(data_root, iters=args.stall_iters, out=args.out)
    rows = figures.ratios(cases, floors)
    load_end = os.getloadavg()
    result = {
        "meta": info,
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "duration_s": time.perf_counter() - t_start,
        "title": f"StreamPETR loaders, {info['affinity']} cores, "
        f"load avg {load_start[0]:.1f} -> {load_end[0]:.1f}",
        "cases": cases,
        "floors_raw": floors_raw,
        "floors": floors,
        "ratios": rows,
        "targets": figures.TARGETS,
        "stall": stall,
    }
    js, png = outputs.write(result, args.out)
    print()
    print(outputs.table(cases, floors, rows))
    if stall:
        from .analysis.stall import stall_table

        print()
        print(stall_table(stall))
    print(f"\nload average {load_start[0]:.2f} -> {load_end[0]:.2f}; {result['duration_s']:.0f} s")
    print(f"wrote {js} and {png}")
    return 0 if all("error" not in c for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
