"""The GPU check's benchmark: DALI on the GPU vs DALI on the CPU, without the mmcv stack.

``python -m loaderbench.sweep.kit --data-root DIR [--threads 1,2,4,8,16] [--quick] [--out DIR]``: the
loader itself for the r50 and ACCV-like profiles, each configuration in its own process
(:mod:`.runcase`, plus its GPU memory); writes ``bench-gpu.json`` + ``.png``; exit 1 if one failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..results import figures, outputs
from .cases import ACCV_BATCH, ACCV_IDA, ACCV_SEQ_SPLIT, Case, default_data_root
from .runcase import answer, batches_for, measure_built, run_json

QUICK = {"warmup": 1, "batches": 1, "repeats": 1, "step_s": 0.2, "handover_calls": 1}  # a smoke run
FULL = {"warmup": 3, "batches": 10, "repeats": 3, "step_s": 0.5, "handover_calls": 6}


def loader_config(profile: str, threads: int, device: str) -> Any:
    """The loader settings of a profile: r50 = LoaderConfig's defaults (the r50 config's), accv =
    the ACCV-like crop, batch 8, its sequence split and a replicated data set."""
    from dali_streampetr import loader_config_from

    r50 = loader_config_from({}, num_threads=threads, device=device)  # a bare config: the defaults, streaming
    if profile == "r50":
        return r50
    if profile == "accv":
        aug = replace(r50.aug, final_dim=ACCV_IDA["final_dim"], resize_lim=ACCV_IDA["resize_lim"])
        return replace(
            r50, aug=aug, samples_per_gpu=ACCV_BATCH, seq_split_num=ACCV_SEQ_SPLIT,
            replicate_dataset_per_gpu=True,
        )  # fmt: skip
    raise ValueError(f"unknown profile {profile!r} (r50, accv)")


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """One configuration in this process, measured like :func:`.runcase.run` measures its own."""
    from dali_streampetr import build_loader

    case = Case(**spec["case"])
    cfg = loader_config(case.profile, case.threads, case.device)
    device_id = 0 if case.device == "gpu" else None

    def build() -> tuple[Any, int]:
        loader = build_loader(cfg, spec["data_root"], rank=0, world_size=1, seed=0, device_id=device_id)
        return loader, cfg.samples_per_gpu

    return measure_built(case, spec, build)


def plan(threads: list[int], cores: int, gpu: bool) -> list[Case]:
    """Both profiles at every thread count up to ``cores``, on the CPU and (``gpu``) with nvJPEG."""
    counts = [t for t in threads if t <= cores] or [min(threads)]
    devices = ("cpu", "gpu") if gpu else ("cpu",)
    return [Case(p, "dali", threads=t, device=d) for p in ("r50", "accv") for t in counts for d in devices]


def gpu_table(cases: list[dict[str, Any]]) -> str:
    """CPU-s per sample and GPU memory, the figures the loader benchmark's table does not carry."""
    lines = ["| configuration | samples/s | CPU-s/sample | GPU memory MiB |", "|---|---|---|---|"]
    for c in cases:
        if "summary" in c:
            s, mem = c["summary"], c.get("gpu_mem_mb")
            lines.append(
                f"| {c['case']['name']} | {s['samples_per_s']:.2f} | {s['cpu_s_per_sample']:.3f} | "
                f"{'-' if mem is None else f'{mem:.0f}'} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="loaderbench.sweep.kit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path, help="the synthetic data set (default: made if missing)")
    ap.add_argument("--threads", default="1,2,4,8,16", help="DALI thread counts, capped at the cores")
    ap.add_argument("--quick", action="store_true", help=f"short runs: {QUICK}")
    ap.add_argument("--out", type=Path, default=Path("out") / "gpu-check", help="output folder")
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0].startswith("{"):  # one configuration, in a child process (run_json)
        return answer(run_case, argv)
    args = ap.parse_args(argv)
    if args.data_root is None:
        args.data_root = default_data_root()
    threads = sorted({int(t) for t in args.threads.split(",") if t.strip()})
    cores = len(os.sched_getaffinity(0))
    import torch

    gpu = torch.cuda.is_available()
    todo = plan(threads, cores, gpu)
    if not gpu:
        print("GPU rows skipped: torch sees no CUDA device; the CPU rows only", flush=True)
    settings = QUICK if args.quick else FULL
    cases = []
    for case in todo:
        spec = {**settings, "case": {k: v for k, v in case.to_dict().items() if k not in ("name", "cores")}}
        batches = settings["batches"] if args.quick else batches_for(case.profile, settings["batches"])
        spec.update(data_root=str(args.data_root), batches=batches)
        t0 = time.perf_counter()
        res = run_json("loaderbench.sweep.kit", spec)
        res.setdefault("case", case.to_dict())
        if "error" in res:
            print(f"  {case.name:20s} FAILED {res['error']}", flush=True)
        else:
            res["summary"] = figures.summarise_case(res)
            print(f"  {case.name:20s} {res['summary']['ms_per_batch']:7.1f} ms/batch "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
        cases.append(res)
    name = torch.cuda.get_device_name(0) if gpu else None
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cores": cores, "gpu": name, "settings": settings}
    result = {
        "meta": {**meta, "data_root": str(args.data_root)},
        "title": f"DALI GPU vs CPU, {cores} cores, {name or 'no GPU'}",
        "cases": cases,
    }
    js, png = outputs.write(result, args.out, "bench-gpu")
    print()
    print(outputs.table(cases, [], []).split("\n\n")[0])
    print()
    print(gpu_table(cases))
    print(f"wrote {js} and {png}")
    return 0 if all("error" not in c for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
