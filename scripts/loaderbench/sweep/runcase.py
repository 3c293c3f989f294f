"""Measure one configuration in this process: ``python -m loaderbench.sweep.runcase '<json>'``.

The JSON holds ``case`` (a :class:`.cases.Case` as dict), ``data_root``, ``warmup``, ``batches``,
``repeats``, ``step_s``, ``handover_calls`` and optional DALI ``overrides``; the result is printed
as one JSON line prefixed with ``RESULT``. One process per configuration keeps imports, threads and
memory peaks apart.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..measure.proctree import PeakGpuMemory, PeakMemory, Stopwatch
from .cases import Case, build, enter_checkout, load_config

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
    """A child's side of :func:`.spawn.run_json`: its spec (JSON, the first argument) in, ``run``'s
    result out as one ``RESULT`` line."""
    print(RESULT_TAG + json.dumps(run(json.loads((argv or sys.argv[1:])[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(answer(run))
