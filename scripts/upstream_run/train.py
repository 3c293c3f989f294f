"""Real StreamPETR training in the upstream env: `train_torch` (PyTorch DataLoader) and `train_dali`.

Runs `tools/train.py` of the applied checkout with a CPU smoke config (or any config), one process
or `--gpus K` processes under torchrun (NCCL on GPUs, gloo on a CPU-only host), streams its log
(one line per iteration: time, data_time, losses), then checks the run with `upstream_run.check_run`:
every logged loss finite, a checkpoint whose meta holds CLASSES, and with `--validate` a finite
mAP/NDS from the upstream evaluation hook. With the DALI loader each rank also logs which (scene,
frame) and draw every batch slot received; `upstream_run.slots` checks the split (over all segments
of a resumed run). `--resume-from`/`--auto-resume` continue a run to `--iters` (the DALI loader
continues its exact data stream; the PyTorch sampler restarts, as upstream). Exit status 0 only
when everything holds.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from overlaytool import require_code_root
from upstream_env import env_python

CONFIGS = {
    "torch": {
        "smoke": "projects/configs/cpu/stream_petr_r50_cpu_smoke.py",
        "small": "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py",
        "plain-attn": "projects/configs/cpu/stream_petr_r50_cpu_smoke_plain_attn.py",
        "petrv1": "projects/configs/cpu/petrv1_r50_cpu_smoke.py",
        "8key": "projects/configs/cpu/stream_petr_r50_8key_cpu_smoke_352.py",
    },
    "dali": {
        "smoke": "projects/configs/dali/stream_petr_r50_cpu_smoke_dali.py",
        "small": "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py",
        "petrv1": "projects/configs/dali/petrv1_r50_cpu_smoke_dali.py",
        "8key": "projects/configs/dali/stream_petr_r50_8key_cpu_smoke_352_dali.py",
    },
}
# Prints whether a config trains outside streaming (seq_mode=False: upstream's epoch-based sampler).
# A config is data: read first with torch kept out (mmcv then skips its torch parts: 1 s, not 5),
# and again with it where that fails (a config that imports torch itself).
_EPOCH_BASED = (
    "import sys; from mmcv import Config; "
    "print(not Config.fromfile(sys.argv[1], import_custom_modules=False).data.train.get('seq_mode', False))"
)
_WITHOUT_TORCH = "import sys; sys.modules['torch'] = None; "


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="upstream_run train", description=__doc__)
    ap.add_argument("--loader", choices=sorted(CONFIGS), default="torch", help="training data loader")
    ap.add_argument("--iters", type=int, default=5, help="training iterations (default 5)")
    ap.add_argument(
        "--data-root", type=Path, required=True, help="folder with nuscenes2d_temporal_infos_*.pkl"
    )
    ap.add_argument("--work-dir", type=Path, help="default: work_dirs/train_<loader>")
    ap.add_argument(
        "--config",
        default="smoke",
        help="smoke, small (final_dim 128x352), plain-attn, petrv1 and 8key "
        "(DALI: single frame, sliding window), or a path",
    )
    ap.add_argument("--gpus", type=int, default=1, help="processes (torchrun) — one per GPU, or CPU ranks")
    ap.add_argument(
        "--replicate-dataset-per-gpu",
        action="store_true",
        help="every rank samples the whole data set (data_loading_config.replicate_dataset_per_gpu); "
        "default: the ranks share out the sequences",
    )
    ap.add_argument("--workers", type=int, default=1, help="DataLoader workers per process (torch loader)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--validate", action="store_true", help="run the upstream evaluation hook (mAP/NDS on the val split)"
    )
    ap.add_argument(
        "--eval-interval", type=int, help="with --validate: evaluate every N iterations (default: at the end)"
    )
    resume = ap.add_mutually_exclusive_group()
    resume.add_argument("--resume-from", type=Path, help="continue the run of this checkpoint to --iters")
    resume.add_argument(
        "--auto-resume", action="store_true", help="continue from the work dir's latest checkpoint, if any"
    )
    ap.add_argument("--python", type=Path, default=env_python(), help="the upstream env's python")
    ap.add_argument("--cfg-options", nargs="*", default=[], help="more overrides for tools/train.py")
    args = ap.parse_args(argv)
    if args.iters < 1:
        ap.error("--iters must be >= 1")
    if args.gpus < 1:
        ap.error("--gpus must be >= 1")
    if args.eval_interval is not None and (args.eval_interval < 1 or not args.validate):
        ap.error("--eval-interval needs --validate and must be >= 1")
    if args.config in CONFIGS["torch"] and args.config not in CONFIGS[args.loader]:
        ap.error(
            f"--config {args.config} has no {args.loader} variant; one of {', '.join(CONFIGS[args.loader])}"
        )
    args.work_dir = args.work_dir or ROOT / "work_dirs" / f"train_{args.loader}"
    return args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def epoch_based(args: argparse.Namespace, config: str) -> bool:
    """Whether ``config`` trains outside streaming: the DALI loader then reproduces upstream's
    distributed sampler and needs a process group, also for one process."""
    for code in (_WITHOUT_TORCH + _EPOCH_BASED, _EPOCH_BASED):
        out = subprocess.run(
            [str(args.python), "-c", code, config],
            cwd=require_code_root("upstream_run"),
            capture_output=True,
            text=True,
        )
        if out.returncode == 0:
            break
    else:
        raise SystemExit(f"upstream_run train: cannot read {config}: {out.stderr.strip()[-500:]}")
    return out.stdout.strip().endswith("True")


def train_script(args: argparse.Namespace) -> list[str]:
    """`tools/train.py <config> ...` with the run's options (no python, no launcher)."""
    config = CONFIGS[args.loader].get(args.config, args.config)
    data = args.data_root.resolve()
    ann = data / "nuscenes2d_temporal_infos_train.pkl"
    options = [
        f"runner.max_iters={args.iters}",
        f"checkpoint_config.interval={args.iters}",
        f"data.workers_per_gpu={args.workers}",
        f"data.train.data_root={data}/",
        f"data.train.ann_file={ann}",
        f"data_loading_config.replicate_dataset_per_gpu={args.replicate_dataset_per_gpu}",
        f"evaluation.interval={args.eval_interval or args.iters}",
        f"data.val.data_root={data}/",
        f"data.val.ann_file={data / 'nuscenes2d_temporal_infos_val.pkl'}",
        *args.cfg_options,
    ]
    script = ["tools/train.py", config, "--work-dir", str(args.work_dir.resolve())]
    script += [] if args.validate else ["--no-validate"]
    if args.resume_from:
        script += ["--resume-from", str(args.resume_from.resolve())]
    elif args.auto_resume:
        script += ["--auto-resume"]
    return [*script, "--seed", str(args.seed), "--cfg-options", *options]


def train_command(args: argparse.Namespace) -> list[str]:
    """The tools/train.py command line (run in the checkout), under torchrun when --gpus > 1 or when
    a DALI run of an epoch-based config needs a process group."""
    script = train_script(args)
    if args.gpus == 1 and not (args.loader == "dali" and epoch_based(args, script[1])):
        return [str(args.python), *script]
    launcher = [str(args.python), "-m", "torch.distributed.run", f"--nproc_per_node={args.gpus}"]
    launcher += ["--master_addr=127.0.0.1", f"--master_port={free_port()}"]
    return [*launcher, *script, "--launcher", "pytorch"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tree = require_code_root("upstream_run")
    if not (args.data_root / "nuscenes2d_temporal_infos_train.pkl").exists():
        print(
            f"upstream_run train: {args.data_root} has no nuscenes2d_temporal_infos_train.pkl",
            file=sys.stderr,
        )
        return 2
    cmd = train_command(args)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    if not (args.resume_from or args.auto_resume):  # a resumed run appends to the slot logs
        for old in args.work_dir.glob("slots_rank*.jsonl"):
            old.unlink()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    print(f"$ (cd {os.path.relpath(tree, ROOT)} &&", " ".join(cmd[1:]), ")", file=sys.stderr, flush=True)
    code = subprocess.run(cmd, cwd=tree, env=env).returncode
    if code != 0:
        print(f"upstream_run train: tools/train.py failed (exit {code}).", file=sys.stderr)
        return code
    scripts = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    label = f"train_{args.loader}"
    work_dir = str(args.work_dir.resolve())
    check = [str(args.python), "-m", "upstream_run.check_run", work_dir, str(args.iters), label]
    check += ["--validated"] if args.validate else []
    code = subprocess.run(check, env=scripts).returncode
    if code == 0 and args.loader == "dali":
        slots = [str(args.python), "-m", "upstream_run.slots", work_dir]
        slots += ["--replicate-dataset-per-gpu"] if args.replicate_dataset_per_gpu else []
        code = subprocess.run(slots, env=scripts).returncode
    return code


if __name__ == "__main__":
    sys.exit(main())
