"""ETAs of the env build steps: measured, never guessed.

Every finished step records its seconds and the core count in `<cache>/build-timings.json`; the
next build's ETA for a step is the median of this machine's last records of it, scaled by cores
for the compile steps. With no record yet it is `REFERENCE`, measured cold on a 2-core host
(docs/upstream-env.md, "Cold start: where the time goes"), scaled the same way. Progress only:
nothing here changes what is built (so this module is not part of the env digest).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from overlaytool import cache_root, replace_file

# step -> (seconds measured cold on a 2-core host, whether it is CPU-bound: scales with cores).
# The cold `nox -s train_dali` of 2026-12-01 on an idle 2-core host (load 0.1-1.8), the reduced op
# set; the full compile from the cold baseline build of the same day (load 2-6).
REFERENCE: dict[str, tuple[float, bool]] = {
    "venv": (3.4, False),
    "torch": (26.3, False),  # with the train sessions' data set made beside it (`--beside synthdata`)
    "mmcv-reduced": (18.7, True),  # pybind.cpp with pybind11's head alone (op_set._head), 25 CPU-s
    "mmcv-full": (864.7, True),
    # CUDA ops, 4 arches, nvcc from the index: the CUDA op set, 2026-12-03 at load 4.5 (242.7 CPU-s).
    "mmcv-cuda-reduced": (214.3, True),
    "mmdet3d": (9.4, False),
    "requirements": (3.0, False),  # mmcv-full and what is left: the rest came beside the compile
    "check": (10.9, False),
}
REFERENCE_CORES = 2
KEEP = 5  # records kept per step


def timings_file() -> Path:
    return cache_root() / "build-timings.json"


def _cores() -> int:
    return os.cpu_count() or 1


def _load() -> dict[str, list[dict]]:
    """The recorded timings; an unreadable or malformed file counts as none (it only feeds ETAs)."""
    try:
        data = json.loads(timings_file().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    good: dict[str, list[dict]] = {}
    for step, runs in data.items():
        if isinstance(runs, list):
            good[step] = [
                r
                for r in runs
                if isinstance(r, dict)
                and isinstance(r.get("seconds"), (int, float))
                and r["seconds"] >= 0
                and isinstance(r.get("cores"), int)
                and r["cores"] > 0
            ]
    return good


def estimate(step: str, cores: int | None = None) -> tuple[float, str] | None:
    """(seconds, where the number comes from) for `step` on `cores` cores, or None when unknown."""
    cores = cores or _cores()
    bound = REFERENCE.get(step, (0.0, True))[1]
    runs = _load().get(step, [])
    if runs:
        scaled = [r["seconds"] * (r["cores"] / cores if bound else 1.0) for r in runs]
        return statistics.median(scaled), f"median of {len(runs)} earlier build(s) on this machine"
    if step in REFERENCE:
        seconds, _ = REFERENCE[step]
        factor = REFERENCE_CORES / cores if bound else 1.0
        where = f"measured on a {REFERENCE_CORES}-core host"
        if factor != 1.0:
            where += f", scaled to {cores} cores"
        return seconds * factor, where
    return None


def human(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def eta_line(step: str) -> str:
    """`ETA ≈ 1 min 35 s (why)` for a console line, or a line saying there is no measurement yet."""
    est = estimate(step)
    if est is None:
        return "ETA: unknown (no build of this kind measured yet)"
    return f"ETA ≈ {human(est[0])} ({est[1]})"


def record(step: str, seconds: float, cpu: float | None = None) -> None:
    """Add a finished step's wall time (and CPU seconds, for the reader) to the record, atomically;
    a failure to write is not an error."""
    data = _load()
    runs = data.setdefault(step, [])
    run = {"seconds": round(seconds, 1), "cores": _cores(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if cpu is not None:
        run["cpu_seconds"] = round(cpu, 1)
    runs.append(run)
    del runs[:-KEEP]
    path = timings_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(data, indent=1) + "\n")
    except OSError:
        pass
