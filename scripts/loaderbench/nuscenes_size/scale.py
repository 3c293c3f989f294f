"""The loaders at nuScenes size: ``python -m loaderbench --case scale [--frames N] [--pass-frames M]``.

Build time, first batch and node PSS of each loader, in 1 or 2 rank processes in lock step, on an
N-frame replica of the synthetic infos (default 28,130), and the PSS growth over a full pass of an
M-frame one (docs/benchmark.md). ``--split val``: the test loaders. Writes ``scale.json`` + ``.png``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..measure.proctree import memory_mb, tree
from ..results.outputs import write
from ..sweep.cases import ROOT, Case, build, default_data_root, enter_checkout, load_config
from ..sweep.runcase import answer, run_json
from .replica import replicate_infos

PHASE_TAG = "PHASE "
SETTLE_S = 1.0  # the loader's run-ahead batch (~0.2 s here) has finished before a reading
NUSCENES_TRAIN = 28130
NUSCENES_VAL = 6019
TORCH_WORKERS = 2
DALI_THREADS = 2


def tree_pss_mb() -> tuple[float, float]:
    """(PSS of this process's tree, of this process alone) in MiB."""
    me = os.getpid()
    own = memory_mb(me)[1]
    return own + sum(memory_mb(s.pid)[1] for s in tree(me) if s.pid != me), own


def settle_heap() -> None:
    """Let the run-ahead batch finish, then give the free heap back (glibc ``malloc_trim``): else freed
    batch tensors (~26 MB each) stay or not by the allocator's whim, and the PSS moves in batch steps."""
    time.sleep(SETTLE_S)
    libc = ctypes.util.find_library("c")
    if libc:
        trim = getattr(ctypes.CDLL(libc), "malloc_trim", None)
        if trim is not None:
            trim(0)


def _phase(name: str, **values: Any) -> None:
    """Report this rank's values of a phase and wait until every rank has reported it."""
    settle_heap()
    total, own = tree_pss_mb()
    print(PHASE_TAG + json.dumps({"phase": name, "pss_mb": total, "main_pss_mb": own, **values}), flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the bench driver went away")


def run_rank(spec: dict[str, Any]) -> None:
    """One rank (``python -m loaderbench.nuscenes_size.scale --rank '<json>'``), reporting phases to the
    driver."""
    enter_checkout()
    import dali_streampetr  # noqa: F401  (everything either loader imports, before "imported")
    import projects.mmdet3d_plugin  # noqa: F401
    import torch  # noqa: F401
    from nvidia.dali import fn  # noqa: F401

    data_root = Path(spec["data_root"])
    cfg = load_config("r50", data_root)
    cfg.data.train.ann_file = spec["ann_file"]
    test = spec.get("split") == "val"
    if test:  # as tools/test.py leaves data.test
        cfg.data.test.update(data_root=f"{data_root}/", ann_file=spec["ann_file"], test_mode=True)
        cfg.data.samples_per_gpu = 1
    case = Case("eval" if test else "r50", spec["loader"], workers=TORCH_WORKERS, threads=DALI_THREADS)
    _phase("imported")
    t0 = time.perf_counter()
    # upstream's test DataLoader: one rank each (the sampler split is not what is measured)
    loader = build(case, cfg, data_root, rank=spec["rank"], world_size=spec["world_size"])
    build_s = time.perf_counter() - t0
    inner = loader.loader if test or spec["loader"] == "dali" else loader
    frames = len(inner.frames) if spec["loader"] == "dali" else len(inner.dataset)
    _phase("built", build_s=build_s, frames=frames)
    it = iter(loader)
    t0 = time.perf_counter()
    next(it)
    _phase("first batch", first_batch_s=time.perf_counter() - t0)
    batch = int(cfg.data.samples_per_gpu)
    done = 1
    while done < spec["batches"]:
        next(it)
        done += 1
    _phase("batches", batches=done, frames_touched=done * batch)
    if spec["full_pass"]:
        per_pass = spec.get("pass_batches") or -(-frames // (batch * spec["world_size"]))
        while done < per_pass:
            next(it)
            done += 1
        _phase("pass", batches=done, frames_touched=done * batch)
    if hasattr(loader, "close"):
        loader.close()


def check(spec: dict[str, Any]) -> dict[str, Any]:
    """What the store is held against, in a process of its own (``python -m
    loaderbench.nuscenes_size.scale '<json>'``): ``read``, one read of that info file as upstream's
    dataset reads it (``mmcv.load``, timed after the imports); else the frames and the attributes that
    differ between the store's frames and the per-frame reader's (``read_frames``, the former path)."""
    if "read" in spec:
        from mmcv import load

        t0 = time.perf_counter()
        load(spec["read"])
        return {"how": "mmcv.load", "seconds": time.perf_counter() - t0}
    os.environ["STREAMPETR_DALI_FRAME_STORES"] = spec["store_dir"]
    from dataclasses import fields

    from dali_streampetr.toolkit import load_frames, read_frames

    files = (spec["ann_file"], spec["data_root"], spec["classes"])
    store, records = load_frames(*files), read_frames(*files)
    diffs = int(len(store) != len(records))
    for i, want in enumerate(records):
        diffs += sum(not _same(getattr(want, f.name), getattr(store[i], f.name)) for f in fields(want))
    return {"frames": len(records), "diffs": diffs}


def _same(a: Any, b: Any) -> bool:
    """Bit for bit: type, dtype, shape and bytes of arrays, recursively through lists."""
    import numpy as np

    if isinstance(a, np.ndarray):
        return (
            type(b) is np.ndarray and (a.dtype, a.shape) == (b.dtype, b.shape) and a.tobytes() == b.tobytes()
        )
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def _checked(spec: dict[str, Any]) -> dict[str, Any]:
    res = run_json("loaderbench.nuscenes_size.scale", spec)
    if "error" in res:
        raise RuntimeError(f"scale check {list(spec)[0]} failed: {res['error']}")
    return res


def run_ranks(spec: dict[str, Any], ranks: int, store_dir: Path) -> list[dict[str, dict[str, Any]]]:
    """Run ``ranks`` rank processes of ``spec`` in lock step; per rank: phase name -> its values."""
    env = {**os.environ, "STREAMPETR_DALI_FRAME_STORES": str(store_dir)}
    cmd = [sys.executable, "-m", "loaderbench.nuscenes_size.scale", "--rank"]
    args, pipe = [json.dumps({**spec, "rank": r, "world_size": ranks}) for r in range(ranks)], subprocess.PIPE
    procs = [subprocess.Popen([*cmd, a], stdin=pipe, stdout=pipe, text=True, env=env) for a in args]
    results: list[dict[str, dict[str, Any]]] = [{} for _ in procs]
    try:
        while True:
            reports = [_next_phase(p) for p in procs]
            if all(r is None for r in reports):
                break
            if any(r is None for r in reports):
                raise RuntimeError(f"a rank of {spec['loader']} ended early: {reports}")
            for store, report in zip(results, reports, strict=True):
                store[report["phase"]] = report
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
    finally:
        for p in procs:
            if p.poll() is None:
                p.stdin.close()
                p.wait(timeout=120)
    if any(p.returncode for p in procs):
        raise RuntimeError(
            f"{spec['loader']} at {ranks} rank(s) failed: exit {[p.returncode for p in procs]}"
        )
    return results


def _next_phase(proc: subprocess.Popen) -> dict[str, Any] | None:
    for line in proc.stdout:
        if line.startswith(PHASE_TAG):
            return json.loads(line[len(PHASE_TAG) :])
    return None


def summarise(loader: str, ranks: int, results: list[dict[str, dict[str, Any]]], cold: bool = False) -> dict:
    """Build time, the PSS the loader added (node: sum over ranks) at each phase, growth per frame."""
    first = results[0]
    added = {
        phase: sum(r[phase]["pss_mb"] - r["imported"]["pss_mb"] for r in results)
        for phase in ("built", "first batch", "batches", "pass")
        if phase in first
    }
    row = {
        "loader": loader,
        "ranks": ranks,
        "cold_store": cold,
        "frames": first["built"]["frames"],
        "build_s": max(r["built"]["build_s"] for r in results),
        "first_batch_s": max(r["first batch"]["first_batch_s"] for r in results),
        "node_pss_added_mb": added,
        "ranks_raw": results,
    }
    if "pass" in first:
        touched = first["pass"]["frames_touched"] - first["batches"]["frames_touched"]
        growth = added["pass"] - added["batches"]
        row["pass"] = {
            "frames_touched_after_batches": touched,
            "node_pss_growth_mb": growth,
            "growth_kb_per_frame": growth * 1024 / max(1, touched * ranks),
            "workers_growth_kb_per_frame": sum(
                (r["pass"]["pss_mb"] - r["pass"]["main_pss_mb"])
                - (r["batches"]["pss_mb"] - r["batches"]["main_pss_mb"])
                for r in results
            )
            * 1024
            / max(1, touched * ranks),
            "pass_vs_batches": sum(r["pass"]["pss_mb"] for r in results)
            / sum(r["batches"]["pss_mb"] for r in results),
        }
    return row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="loaderbench --case scale", description=__doc__.split("\n\n")[1])
    ap.add_argument("--split", choices=("train", "val"), default="train",
                    help="val: the test loaders (tools/test.py), default 6019 frames")  # fmt: skip
    ap.add_argument("--frames", type=int, help="replica size (default 28130; 6019 with --split val)")
    ap.add_argument("--pass-frames", type=int, default=400, help="replica of the full pass (default 400)")
    ap.add_argument("--batches", type=int, default=100, help="batches before the PSS reading (default 100)")
    ap.add_argument("--torch-ranks", default="1", help="comma list of DataLoader rank counts (default 1)")
    ap.add_argument("--loaders", default="dali,torch", help="comma list of dali, torch")
    ap.add_argument("--data-root", type=Path, help="source data set (default: the synthetic one)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench-scale", help="output folder")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from . import scale_report as report

    args = parse_args(argv)
    if args.frames is None:
        args.frames = NUSCENES_VAL if args.split == "val" else NUSCENES_TRAIN
    if args.split == "val" and args.out == ROOT / "out" / "bench-scale":
        args.out = ROOT / "out" / "bench-scale-val"
    if args.data_root is None:
        args.data_root = default_data_root()
    data_root, out = args.data_root.resolve(), args.out.resolve()
    src = data_root / "nuscenes2d_temporal_infos_train.pkl"
    out.mkdir(parents=True, exist_ok=True)
    big = replicate_infos(src, out / f"infos_{args.frames}.pkl", args.frames)
    small = replicate_infos(src, out / f"infos_{args.pass_frames}.pkl", args.pass_frames)
    stores = out / "frame-stores"
    shutil.rmtree(stores, ignore_errors=True)
    loaders = [x for x in args.loaders.split(",") if x]
    spec = {"data_root": str(data_root), "ann_file": str(big), "batches": args.batches, "full_pass": False,
            "split": args.split}  # fmt: skip
    rows: list[dict[str, Any]] = []

    def measure(loader: str, ranks: int, cold: bool = False, **extra: Any) -> None:
        t0 = time.perf_counter()
        row = summarise(loader, ranks, run_ranks({**spec, "loader": loader, **extra}, ranks, stores), cold)
        rows.append(row)
        print(
            f"  {loader} x{ranks}{' (first build)' if cold else ''} {row['frames']} frames: build "
            f"{row['build_s']:.1f} s, node PSS added {row['node_pss_added_mb']}"
            f"  ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )

    read = _checked({"read": str(big)})
    read_s, how = read["seconds"], read["how"]
    print(
        f"scale: {args.frames} frames ({big.stat().st_size / 2**20:.0f} MiB pickle, {how} in {read_s:.1f} s)",
        flush=True,
    )
    pass_batches = -(-args.pass_frames // (1 if args.split == "val" else 2))  # the r50 batch: 2 samples
    if "dali" in loaders:
        # the pipeline's own memory on the embedded frames, over as many batches as the full pass
        measure("dali", 1, ann_file=str(src), full_pass=True, pass_batches=pass_batches)
        measure("dali", 1, cold=True)
        read_after_s = _checked({"read": str(big)})[
            "seconds"
        ]  # the load of this host drifts: the read on both sides
        print(f"  {how} again: {read_after_s:.1f} s", flush=True)
        measure("dali", 1)
        classes = list(load_config("r50", data_root).class_names)
        files = {
            "ann_file": str(big),
            "data_root": str(data_root),
            "classes": classes,
            "store_dir": str(stores),
        }
        res = _checked(files)
        frames, diffs = res["frames"], res["diffs"]
        print(f"  store vs per-frame reader: {diffs} differing attributes in {frames} frames", flush=True)
        measure("dali", 2)
    if "torch" in loaders:
        for ranks in (int(r) for r in args.torch_ranks.split(",") if r):
            measure("torch", ranks)
    for loader in loaders:
        measure(loader, 1, ann_file=str(small), full_pass=True)
    result = {
        "split": args.split,
        "frames": args.frames,
        "pass_frames": args.pass_frames,
        "pickle_mib": big.stat().st_size / 2**20,
        "pickle_read_s": read_s,
        "pickle_read_after_s": read_after_s if "dali" in loaders else None,
        "pickle_read_how": how,
        "frame_diffs": {"frames": frames, "diffs": diffs} if "dali" in loaders else None,
        "load_average": os.getloadavg(),
        "batches": args.batches,
        "rows": rows,
        "targets": report.SCALE_TARGETS,
    }
    js, png = write(result, out, "scale", report.chart)
    print()
    print(report.scale_table(result))
    print(f"\nwrote {js} and {png}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rank":
        run_rank(json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(answer(check) if sys.argv[1:2] and sys.argv[1].startswith("{") else main())
