"""Each configuration of the sweep in its own process (:mod:`.runcase`, :mod:`.floor`): the timed
batches it gets, its JSON result, a progress line per configuration."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..results import figures
from .cases import FRAMES_PER_BATCH, Case
from .runcase import RESULT_TAG


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
