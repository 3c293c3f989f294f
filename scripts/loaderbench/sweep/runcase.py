"""Each configuration in its own process (imports, threads and memory peaks apart): the parent's
side (:func:`run_json`, :func:`measure_case`) and the child's, ``python -m loaderbench.sweep.runcase
'<json>'`` (:func:`run`: the spec of :func:`measure_case` in, one ``RESULT`` line out)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..measure.proctree import PeakGpuMemory, PeakMemory, Stopwatch
from ..results import figures
from .cases import FRAMES_PER_BATCH, Case, build, enter_checkout, load_config

RESULT_TAG = "RESULT "


def measure(
    loader: Any, warmup: int, batches: int, repeats: int, mem: PeakMemory | None = None
) -> dict[str, Any]:
    """Warm-up, then ``repeats`` timed runs of ``batches`` batches each (wall + tree CPU seconds,
    less the CPU of the memory sampler ``mem`` running meanwhile)."""
    it = iter(loader)
    t0 = time.perf_counter()
    next(it)
    first_s = time.perf_counter() - t0
    for _ in range(max(0, warmup - 1)):
        next(it)
    spans = []
    for _ in range(repeats):
        with Stopwatch(exclude=mem.own_cpu if mem else None) as sw:
            for _ in range(batches):
                next(it)
        spans.append(sw.span)
    return {
        "first_batch_s": first_s,
        "repeat_wall_s": [s.wall_s for s in spans],
        "repeat_cpu_s": [s.cpu_s for s in spans],
    }


def handover(it: Any, step_s: float, calls: int) -> list[float]:
    """Training-thread cost: seconds ``next()`` takes after the loader had a model step of ``step_s``
    seconds to prepare (``time.sleep``: the step leaves the CPU and the GIL to the loader, as a GPU
    step mostly does), ``calls`` times, after one settling step that is not counted."""
    times = []
    for _ in range(calls + 1):
        time.sleep(step_s)
        t0 = time.perf_counter()
        next(it)
        times.append(time.perf_counter() - t0)
    return times[1:]


def measure_built(
    case: Case, spec: dict[str, Any], build_loader: Callable[[], tuple[Any, int]], **extra: Any
) -> dict[str, Any]:
    """The record of ``case``: ``build_loader()`` (the loader, its samples per batch) timed, then
    measured as ``spec`` says, with the tree's (and the GPU's) peak memory; ``extra`` after ``case``."""
    load0 = os.getloadavg()
    on_gpu = case.device == "gpu"
    with PeakMemory() as mem, PeakGpuMemory(0) if on_gpu else contextlib.nullcontext() as gpu:
        t0 = time.perf_counter()
        loader, samples_per_batch = build_loader()
        build_s = time.perf_counter() - t0
        result = measure(loader, spec["warmup"], spec["batches"], spec["repeats"], mem)
        if spec.get("handover_calls", 0) > 0:
            result["step_s"] = spec["step_s"]
            result["handover_s"] = handover(iter(loader), spec["step_s"], spec["handover_calls"])
        if hasattr(loader, "close"):
            loader.close()
        del loader
    return {
        "case": case.to_dict(),
        **extra,
        "samples_per_batch": samples_per_batch,
        "batches": spec["batches"],
        "repeats": spec["repeats"],
        "warmup": spec["warmup"],
        "build_s": build_s,
        **result,
        "peak_rss_mb": mem.peak_rss_mb,
        "peak_pss_mb": mem.peak_pss_mb,
        "max_processes": mem.max_processes,
        "gpu_mem_mb": gpu.peak_mb if gpu else None,
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
    }


def run(spec: dict[str, Any]) -> dict[str, Any]:
    case = Case(**spec["case"])
    enter_checkout()
    overrides = {**case.overrides, **spec.get("overrides", {})}

    def build_case() -> tuple[Any, int]:
        cfg = load_config(case.profile, Path(spec["data_root"]))
        return build(case, cfg, Path(spec["data_root"]), **overrides), int(cfg.data.samples_per_gpu)

    return measure_built(case, spec, build_case, overrides=overrides)


def answer(run: Callable[[dict[str, Any]], dict[str, Any]], argv: list[str] | None = None) -> int:
    """A child's side of :func:`run_json`: its spec (JSON, the first argument) in, ``run``'s
    result out as one ``RESULT`` line."""
    print(RESULT_TAG + json.dumps(run(json.loads((argv or sys.argv[1:])[0]))), flush=True)
    return 0


def batches_for(profile: str, batches: int) -> int:
    """Timed batches per repeat: the accv and 8key profiles (8 frames a batch) about 2/3 of r50's
    frames (time budget)."""
    if profile == "r50":
        return batches
    return max(2, math.ceil(batches * FRAMES_PER_BATCH["r50"] / FRAMES_PER_BATCH[profile]) - 1)


def run_json(module: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``python -m module '<spec>'`` and return its RESULT, or ``{'error': ...}``."""
    proc = subprocess.run([sys.executable, "-m", module, json.dumps(spec)], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-3:]
    return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}


def measure_case(case: Case, args: argparse.Namespace, data_root: Path, overrides: dict) -> dict[str, Any]:
    """One configuration in its own process (:mod:`.runcase`), with a progress line."""
    spec = {
        "case": {k: v for k, v in case.to_dict().items() if k not in ("name", "cores")},
        "data_root": str(data_root),
        "warmup": args.warmup if case.profile == "r50" else min(args.warmup, 2),
        "batches": batches_for(case.profile, args.batches),
        "repeats": args.repeats,
        "step_s": args.step_s,
        "handover_calls": args.handover_calls,
        "overrides": overrides if case.loader == "dali" else {},
    }
    t0 = time.perf_counter()
    res = run_json("loaderbench.sweep.runcase", spec)
    res.setdefault("case", case.to_dict())
    if "error" not in res:
        s = figures.summarise_case(res)
        msg = f"{s['ms_per_batch']:7.0f} ms/batch  {s['cpu_s_per_batch']:.3f} CPU-s/batch"
        if s.get("handover_ms") is not None:
            msg += f"  next() after a step {s['handover_ms']:.1f} ms"
    else:
        msg = "FAILED " + res["error"]
    print(f"  {case.name:24s} {msg}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    return res


if __name__ == "__main__":
    sys.exit(answer(run))
