"""Loader stall inside real training: ``data_time`` vs ``time`` from the mmcv ``.log.json`` of
``train_torch`` and ``train_dali`` runs, against the no-loader bound (:mod:`.cachedbound`)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..results.figures import percentile
from ..sweep.cases import ROOT
from ..sweep.runcase import run_json

STALL_CONFIG = "small"  # upstream_run.train's name for the CPU smoke config at 128x352
STALL_CONFIG_PATH = "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py"
STALL_TARGET = 0.01  # the training thread waits for data at most 1 % of the iteration time


def latest_log(work_dir: Path) -> Path:
    logs = sorted(work_dir.glob("*.log.json"))
    if not logs:
        raise FileNotFoundError(f"no *.log.json in {work_dir}")
    return logs[-1]


def parse_log(path: Path) -> list[dict[str, float]]:
    """The training records (``mode == 'train'``) of an mmcv ``.log.json``: iter, time, data_time."""
    records = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("mode") == "train" and "time" in rec and "data_time" in rec:
            records.append({"iter": rec.get("iter"), "time": rec["time"], "data_time": rec["data_time"]})
    return records


def summarise_log(records: list[dict[str, float]], skip: int = 1) -> dict[str, Any]:
    """Medians and spreads (10th/90th percentile, max) after ``skip`` start-up iterations. The stall
    share = total data time / total iteration time (what the loader costs the training thread)."""
    steady = records[skip:] if len(records) > skip else records
    if not steady:
        raise ValueError("log has no training records")
    times, waits = [r["time"] for r in steady], [r["data_time"] for r in steady]
    total = sum(times)
    return {
        "iters": len(steady),
        "skipped": len(records) - len(steady),
        "time_s": statistics.median(times),
        "time_p10_s": percentile(times, 10),
        "time_p90_s": percentile(times, 90),
        "data_time_s": statistics.median(waits),
        "data_time_p90_s": percentile(waits, 90),
        "data_time_max_s": max(waits),
        "data_share": sum(waits) / total if total else 0.0,
        "data_share_p90": percentile([w / t for w, t in zip(waits, times, strict=True) if t], 90),
    }


def analyse(logs: dict[str, Path], bound_s: float | None, skip: int = 1) -> dict[str, dict[str, Any]]:
    """Per loader: the log summary, plus ``loader_cost_s`` = median iteration time - bound and its share."""
    out = {}
    for name, path in logs.items():
        s = summarise_log(parse_log(path), skip)
        s["log"] = str(path)
        if bound_s is not None:
            s["bound_s"] = bound_s
            s["loader_cost_s"] = s["time_s"] - bound_s
            s["loader_cost_share"] = s["loader_cost_s"] / s["time_s"] if s["time_s"] else 0.0
        out[name] = s
    return out


def stall_table(stall: dict[str, Any]) -> str:
    lines = [
        f"training stall ({stall.get('config')}, {stall.get('iters')} iterations, bound "
        f"{_ms(stall.get('bound_s'))} ms/iter on cached batches)",
        "| loader | ms/iter median (p10-p90) | data ms/iter median (p90, max) | stall share (p90 of one "
        "iteration) | iter - bound ms | (share) |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in stall.get("loaders", {}).items():
        lines.append(
            f"| {name} | {_ms(s['time_s'])} ({_ms(s.get('time_p10_s'))}-{_ms(s.get('time_p90_s'))}) | "
            f"{_ms(s['data_time_s'], 1)} ({_ms(s.get('data_time_p90_s'), 1)}, "
            f"{_ms(s.get('data_time_max_s'), 1)}) | "
            f"{s['data_share']:.2%} ({s.get('data_share_p90', 0):.2%}) | "
            f"{_ms(s.get('loader_cost_s'))} | {s.get('loader_cost_share', 0):.1%} |"
        )
    for name, why in stall.get("missing", {}).items():
        lines.append(f"| {name} | not run: {why} | | | | |")
    return "\n".join(lines)


def _ms(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v * 1e3:.{digits}f}"


def train(loader: str, data_root: Path, iters: int, work_dir: Path) -> int:
    """``upstream_run train`` (what ``nox -s train_<loader>`` runs) with the small CPU config."""
    cmd = [sys.executable, "-m", "upstream_run", "train", "--loader", loader, "--config", STALL_CONFIG]
    cmd += ["--iters", str(iters), "--data-root", str(data_root), "--work-dir", str(work_dir)]
    cmd += ["--python", sys.executable]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for ckpt in work_dir.glob("*.pth"):  # ~450 MB each; the logs are what we need
        ckpt.unlink()
    return proc.returncode


def run_stall(data_root: Path, iters: int, out: Path, bound_iters: int = 8) -> dict[str, Any]:
    """Train ``iters`` iterations with each loader, measure the cached-batch bound, analyse."""
    logs, missing = {}, {}
    for loader in ("torch", "dali"):
        work_dir = out / "stall" / f"train_{loader}"
        work_dir.mkdir(parents=True, exist_ok=True)
        for old in work_dir.glob("*.log*"):
            old.unlink()
        code = train(loader, data_root, iters, work_dir)
        try:
            logs[f"train_{loader}"] = latest_log(work_dir)
        except FileNotFoundError:
            missing[f"train_{loader}"] = f"exit {code}, no log"
    spec = {"data_root": str(data_root), "config": STALL_CONFIG_PATH, "batches": 2, "iters": bound_iters}
    bound = run_json("loaderbench.analysis.cachedbound", spec)
    bound_s = bound.get("iter_s")
    loaders = analyse(logs, bound_s)
    dali = loaders.get("train_dali")
    return {
        "config": STALL_CONFIG_PATH,
        "iters": iters,
        "target_share": STALL_TARGET,
        "target_met": None if dali is None else dali["data_share"] <= STALL_TARGET,
        "bound": bound,
        "bound_s": bound_s,
        "loaders": loaders,
        "missing": missing,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m loaderbench.analysis.stall NAME=WORK_DIR ... [--bound SECONDS]``: analyse existing runs."""
    import argparse

    ap = argparse.ArgumentParser(prog="loaderbench.analysis.stall", description=main.__doc__)
    ap.add_argument("runs", nargs="+", help="name=work_dir, e.g. train_torch=work_dirs/train_torch")
    ap.add_argument("--bound", type=float, help="cached-batch iteration time in seconds")
    ap.add_argument("--skip", type=int, default=1, help="start-up iterations to leave out (default 1)")
    args = ap.parse_args(argv)
    logs = {n: latest_log(Path(d)) for n, _, d in (r.partition("=") for r in args.runs)}
    stall = {
        "config": "?",
        "iters": "?",
        "bound_s": args.bound,
        "loaders": analyse(logs, args.bound, args.skip),
    }
    print(stall_table(stall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
