"""StreamPETR with the DALI loader on a real SLURM (`nox -s slurm_smoke`).

Uses the SLURM that answers (`srun -p <partition> -n1 true`), else starts a single-node one on this
host (`slurm_local`, root; `--install` first installs slurm-wlm and munge with apt-get) and stops
it at the end, also on failure. Then, with the small DALI smoke config (128x352) on 2 tasks:

1. shard: an sbatch job (`--requeue --signal=USR1@120`, see `jobs.batch_script`) runs
   `srun tools/train.py ... --launcher=slurm --auto-resume` for `--iters` iterations. After its
   first iteration it gets SLURM's warning signal (`scancel --signal=USR1`): `CheckpointOnSignalHook`
   saves a checkpoint at the iteration boundary and requeues the job (`scontrol requeue`); the second
   start resumes from it. Without `--quick` the second start is also requeued from outside (as an
   administrator or a node failure does) once it trains, and the third start finishes. Checked: the
   starts, every resume from latest.pth, every loss finite, the final checkpoint, and the slot logs
   of all segments merged (an iteration logged twice must be identical): disjoint across the ranks
   and the exact stream of the loader run straight (`upstream_run.stream_reference`).
2. replicate (not with `--quick`): 2 iterations with `replicate_dataset_per_gpu=True`: both ranks
   get the whole stream.
3. evaluate the final checkpoint with the command `tools/slurm_test.sh` runs (`srun ... tools/test.py
   <config> <ckpt> --launcher=slurm --eval bbox`, without `--gres`): finite mAP and NDS.

A requeued job waits about two minutes (SLURM's BeginTime) before it may start; the run releases it
at once (`scontrol update JobId=<id> StartTime=now`). Exit status 0 only when everything holds.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from overlaytool import require_code_root
from upstream_env import env_python

from .progress import SmokeError, say
from .runs import evaluate, replicate, shard_with_signal_and_requeue
from .which_slurm import slurm


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="upstream_run slurm_smoke", description=__doc__)
    ap.add_argument("--data-root", type=Path, required=True, help="folder with the info pickles")
    ap.add_argument("--work-dir", type=Path, default=ROOT / "work_dirs" / "slurm_smoke")
    ap.add_argument("--iters", type=int, default=4, help="iterations of the sharded run (default 4)")
    ap.add_argument(
        "--quick", dest="full", action="store_false",
        help="only the warning signal's requeue (no scontrol requeue, no replicate run): the test's run",
    )  # fmt: skip
    ap.add_argument("--partition", default="cpu")
    ap.add_argument("--cpus-per-task", type=int, default=1)
    ap.add_argument("--install", action="store_true", help="apt-get install slurm-wlm munge when missing")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for each job (default 900)")
    ap.add_argument("--python", type=Path, default=env_python(), help="the upstream env's python")
    args = ap.parse_args(argv)
    if args.iters < (4 if args.full else 3):
        ap.error(
            "--iters must be >= 4 (>= 3 with --quick): the signal, the requeue and the end each need one"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tools = require_code_root("upstream_run") / "tools"
    if not (tools / "tool_hooks" / "slurm_env.py").exists():
        print(
            f"upstream_run slurm_smoke: {tools} lacks the overlay's tool_hooks/slurm_env.py; `nox -s apply`.",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the local SLURM
    try:
        with slurm(args.partition, args.install) as env:
            checkpoint = shard_with_signal_and_requeue(env, args)
            if args.full:
                replicate(env, args)
            evaluate(env, args, checkpoint)
    except SmokeError as exc:
        print(f"upstream_run slurm_smoke: {exc}", file=sys.stderr)
        return 1
    say(f"all checks passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
