"""Evaluate a checkpoint with upstream's `tools/test.py <config> <ckpt> --eval bbox` (`nox -s evaluate`).

Runs in the applied checkout with the upstream env's python: one process (on a CPU-only host through
the patch that gives tools/test.py a CPU path; a GPU host goes through the launcher, as
`tools/dist_test.sh <config> <checkpoint> 1` does), or `--gpus K` processes under torchrun (NCCL on
GPUs, gloo on a CPU-only host). The config defaults to the one `tools/train.py` dumped into the
checkpoint's work dir. nuscenes-devkit's result and metrics JSON are kept in `<work dir>/eval/pts_bbox/`;
mAP, NDS and the per-class table are printed from them. Exit 0 only when mAP and NDS are finite.

`--loader dali|torch` chooses the test loader (`use_dali_test_pipeline`); without it the config
decides (DALI where it sets `use_dali_pipeline=True` or `use_dali_test_pipeline=True`). The loader
that ran is printed with the metrics. `--sharding scenes|upstream` chooses how several processes
split the frames (`data_loading_config.test_sharding`: whole scenes per rank, or upstream's chunks);
without it the config decides (scenes for a DALI config), and what the ranks printed is reported.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from gpukit import CheckError, probe
from overlaytool import REPO_ROOT as ROOT
from overlaytool import require_code_root
from upstream_env import env_python

from .train import CONFIGS, free_port

VAL_INFOS = "nuscenes2d_temporal_infos_val.pkl"
LOADERS = ("dali", "torch")
SHARDINGS = ("scenes", "upstream")
# what tools/test.py prints per rank on several processes, with either test loader
SHARDING_LINE = re.compile(r"rank \d+ of \d+ \(test_sharding=(\w+)\)")  # ranks share a line with the bar
DALI_LINE = "DALI test loader (test):"  # what the DALI test loader logs when tools/test.py builds it
DEFAULT_CHECKPOINT = ROOT / "work_dirs" / "train_dali" / "latest.pth"
TP_ERRORS = (("trans_err", "ATE"), ("scale_err", "ASE"), ("orient_err", "AOE"), ("vel_err", "AVE"),
             ("attr_err", "AAE"))  # fmt: skip


class EvaluateError(Exception):
    """A user-facing failure: the message names the file or option and what to do."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="upstream_run evaluate", description=__doc__)
    ap.add_argument(
        "checkpoint", type=Path, nargs="?", default=DEFAULT_CHECKPOINT,
        help="checkpoint to evaluate (default: work_dirs/train_dali/latest.pth)",
    )  # fmt: skip
    ap.add_argument("--data-root", type=Path, required=True, help=f"folder with {VAL_INFOS}")
    ap.add_argument("--ann-file", type=Path, help=f"the val info pickle (default: <data-root>/{VAL_INFOS})")
    ap.add_argument(
        "--config",
        help="smoke, small, plain-attn or a path (default: the config tools/train.py dumped beside the "
        "checkpoint)",
    )
    ap.add_argument("--gpus", type=int, default=1, help="processes (torchrun) — one per GPU, or CPU ranks")
    ap.add_argument("--loader", choices=LOADERS, help="the test loader (default: the one the config selects)")
    ap.add_argument(
        "--sharding", choices=SHARDINGS,
        help="several processes: whole scenes per rank, or upstream's chunks (default: the config's)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, help="where the JSON results go (default: <checkpoint dir>/eval)")
    ap.add_argument("--python", type=Path, default=env_python(), help="the upstream env's python")
    ap.add_argument("--cfg-options", nargs="*", default=[], help="more overrides for tools/test.py")
    args = ap.parse_args(argv)
    if args.gpus < 1:
        ap.error("--gpus must be >= 1")
    args.checkpoint = args.checkpoint.resolve()  # given from where the user is; test.py runs in the checkout
    args.out = (args.out or args.checkpoint.parent / "eval").resolve()
    args.ann_file = (args.ann_file or args.data_root / VAL_INFOS).resolve()
    return args


def default_config(checkpoint: Path) -> Path:
    """The config `tools/train.py` dumped into the checkpoint's work dir: of the `*.py` files there, the
    newest one written before the checkpoint (a work dir reused with other configs holds several)."""
    written = checkpoint.stat().st_mtime
    dumped = [p for p in checkpoint.parent.glob("*.py") if p.stat().st_mtime <= written]
    if not dumped:
        raise EvaluateError(
            f"{checkpoint.parent}: no config that tools/train.py dumped before {checkpoint.name}; "
            "pass --config smoke|small|<path>"
        )
    return max(dumped, key=lambda p: p.stat().st_mtime)


def resolve_config(name: str | None, checkpoint: Path, tree: Path) -> Path:
    """`--config`: an alias of the CPU configs, a path (absolute, or relative to the checkout's code
    root ``tree``), or the default next to the checkpoint."""
    if name is None:
        return default_config(checkpoint)
    alias = CONFIGS["dali"].get(name) or CONFIGS["torch"].get(name)
    for path in (tree / alias,) if alias else (Path(name), tree / name):
        if path.is_file():
            return path.resolve()
    raise EvaluateError(f"--config {name}: no such config (an alias: smoke, small, plain-attn; or a path)")


def test_command(args: argparse.Namespace, config: Path, on_gpu: bool) -> list[str]:
    """The tools/test.py command line (run in the checkout); under torchrun for several processes or a GPU."""
    data = args.data_root.resolve()
    options = [f"data.test.data_root={data}/", f"data.test.ann_file={args.ann_file}"]
    if args.loader:
        options.append(f"use_dali_test_pipeline={args.loader == 'dali'}")
    if args.sharding:
        options.append(f"data_loading_config.test_sharding={args.sharding}")
    options += args.cfg_options
    script = ["tools/test.py", str(config), str(args.checkpoint.resolve()), "--eval", "bbox"]
    script += ["--cfg-options", *options, "--eval-options", f"jsonfile_prefix={args.out}"]
    if args.gpus == 1 and not on_gpu:
        return [str(args.python), *script]
    launcher = [str(args.python), "-m", "torch.distributed.run", f"--nproc_per_node={args.gpus}"]
    launcher += ["--master_addr=127.0.0.1", f"--master_port={free_port()}"]
    return [*launcher, *script, "--launcher", "pytorch", "--tmpdir", str(args.out / ".collect")]


def _fmt(value: float) -> str:
    return f"{value:.4f}" if math.isfinite(value) else "nan"


def format_metrics(summary: dict) -> str:
    """mAP, NDS, the mean true-positive errors and the per-class table of a `metrics_summary.json`."""
    lines = [f"mAP: {_fmt(summary['mean_ap'])}", f"NDS: {_fmt(summary['nd_score'])}"]
    lines += [f"m{short}: {_fmt(summary['tp_errors'][key])}" for key, short in TP_ERRORS]
    lines.append(f"{'Object Class':22s}{'AP':>8s}" + "".join(f"{short:>8s}" for _, short in TP_ERRORS))
    for name, ap in summary["mean_dist_aps"].items():
        errors = summary["label_tp_errors"][name]
        lines.append(f"{name:22s}{_fmt(ap):>8s}" + "".join(f"{_fmt(errors[k]):>8s}" for k, _ in TP_ERRORS))
    return "\n".join(lines)


def read_metrics(out: Path) -> dict:
    path = out / "pts_bbox" / "metrics_summary.json"
    if not path.is_file():
        raise EvaluateError(f"{path}: tools/test.py wrote no metrics summary")
    return json.loads(path.read_text())


def _check_inputs(args: argparse.Namespace) -> None:
    if not args.checkpoint.is_file():
        raise EvaluateError(f"{args.checkpoint}: no such checkpoint (train first: `nox -s train_dali`)")
    if not args.ann_file.is_file():
        raise EvaluateError(f"{args.ann_file}: no val info pickle (make it with `nox -s create_data`)")


def run_teed(cmd: list[str], tree: Path) -> tuple[int, str]:
    """Run ``cmd`` in the checkout's code root ``tree``, its output (stdout and stderr) passed through
    as it comes and kept."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    kept = []
    with subprocess.Popen(
        cmd,
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    ) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            kept.append(line)
    return proc.returncode, "".join(kept)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        _check_inputs(args)
        tree = require_code_root("upstream_run")
        config = resolve_config(args.config, args.checkpoint, tree)
        cmd = test_command(args, config, on_gpu=probe(args.python)["cuda_available"])
        shutil.rmtree(args.out / "pts_bbox", ignore_errors=True)  # never report an older run's metrics
        args.out.mkdir(parents=True, exist_ok=True)
        print(f"$ (cd {os.path.relpath(tree, ROOT)} &&", " ".join(cmd[1:]), ")", file=sys.stderr, flush=True)
        code, output = run_teed(cmd, tree)
        if code != 0:
            raise EvaluateError(f"tools/test.py failed (exit {code})")
        loader = "dali" if DALI_LINE in output else "torch"
        if args.loader and loader != args.loader:
            raise EvaluateError(f"--loader {args.loader} asked, but tools/test.py ran on the {loader} loader")
        shardings = sorted(set(SHARDING_LINE.findall(output)))
        if args.sharding and args.gpus > 1 and shardings != [args.sharding]:
            printed = shardings or "no sharding"
            raise EvaluateError(f"--sharding {args.sharding} asked, but the ranks printed {printed}")
        summary = read_metrics(args.out)
    except (EvaluateError, CheckError) as exc:  # CheckError: the probe of the env's torch
        print(f"upstream_run evaluate: {exc}", file=sys.stderr)
        return 1
    split = f", {args.gpus} processes, {'/'.join(shardings)} sharding" if shardings else ""
    print(f"\nevaluate: {args.checkpoint} with {config.name} on {args.ann_file}, {loader} test loader{split}")
    print(format_metrics(summary))
    print(f"evaluate: results and metrics JSON in {args.out / 'pts_bbox'}")
    if not (math.isfinite(summary["mean_ap"]) and math.isfinite(summary["nd_score"])):
        print("evaluate: mAP or NDS is not finite", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
