"""The three steps of the SLURM smoke run and their checks: the sharded run (warned, requeued,
resumed, on the exact stream), the replicated run, the evaluation under srun."""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from overlaytool import require_code_root

from ..evaluate import format_metrics, read_metrics
from .command_lines import TASKS, test_line, train_line
from .jobs import run, segment, submit, tail, wait_for
from .progress import SmokeError, say


def scripts_module(args: argparse.Namespace, module: str, *argv: str) -> str:
    """`python -m upstream_run.<module> argv` in the upstream env; its output (fails on exit != 0)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    done = subprocess.run(
        [str(args.python), "-m", f"upstream_run.{module}", *argv], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SmokeError(f"upstream_run.{module} {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def shard_with_signal_and_requeue(env: dict[str, str], args: argparse.Namespace) -> Path:
    """The sharded run: warned after its first iteration (it checkpoints and requeues itself),
    with `--full` also requeued by scontrol while its second start trains; the stream checked."""
    iters = args.iters
    work = (args.work_dir / "shard").resolve()
    job, out = submit(env, args, work, train_line(args, work, iters, iters, replicate=False))
    say(f"shard: job {job}, {TASKS} tasks x {iters} iterations")

    def trained(start: int, iteration: int) -> Callable[[dict[str, str]], bool]:
        return lambda fields: f"Iter [{iteration}/{iters}]" in segment(out, start)

    wait_for(env, job, "the first iteration", trained(0, 1), args.timeout, out)
    run(env, "scancel", "--signal=USR1", job)
    say("shard: sent SLURM's warning signal (scancel --signal=USR1)")
    wait_for(env, job, "the requeue by the hook", lambda f: f.get("Restarts") == "1", args.timeout, out)
    saved = re.findall(r"SIGUSR1: saving a checkpoint at (\d+) iterations", segment(out, 0))
    if (
        len(saved) != 1
        or not 1 <= int(saved[0]) < iters
        or "SIGUSR1: requeueing SLURM job" not in segment(out, 0)
    ):
        raise SmokeError(f"job {job}: no checkpoint and requeue on the signal ({saved}):\n{tail(out)}")
    say(f"shard: iter_{saved[0]}.pth saved on the signal, the job requeued itself")
    starts = 2
    if args.full:
        again = int(saved[0]) + 1
        wait_for(env, job, "an iteration after the requeue", trained(1, again), args.timeout, out)
        run(env, "scontrol", "requeue", job)
        say(f"shard: requeued with scontrol in iteration {again + 1}")
        starts = 3
    done = wait_for(env, job, "the end", lambda f: f.get("JobState") == "COMPLETED", args.timeout, out)
    log = out.read_text()
    found = re.findall(r"slurm_smoke: start (\d+) of job", log)
    if done.get("Restarts") != str(starts - 1) or found != [str(n) for n in range(starts)]:
        raise SmokeError(f"job {job}: expected {starts} starts, got {found}:\n{tail(out)}")
    resumed = re.compile(rf"auto-resume: resuming from {re.escape(str(work))}/iter_\d+\.pth")
    if not all(resumed.search(segment(out, n)) for n in range(1, starts)):
        raise SmokeError(f"job {job}: a requeued start did not auto-resume:\n{tail(out)}")
    say(f"shard: {starts} starts, each requeued one resumed from an iter_N.pth")
    print(scripts_module(args, "check_run", str(work), str(iters), "slurm_shard"), end="")
    print(scripts_module(args, "slots", str(work)).splitlines()[-1])
    reference = args.work_dir.resolve() / "shard_reference"
    shutil.rmtree(reference, ignore_errors=True)
    scripts_module(
        args, "stream_reference", str(reference), "--data-root", str(args.data_root),
        "--world-size", str(TASKS), "--iters", str(iters),
    )  # fmt: skip
    print(scripts_module(args, "slots", "--compare", str(work), str(reference)), end="")
    return work / f"iter_{iters}.pth"


def replicate(env: dict[str, str], args: argparse.Namespace) -> None:
    """2 iterations with every rank on the whole data set; both ranks must get the whole stream."""
    work = (args.work_dir / "replicate").resolve()
    job, out = submit(env, args, work, train_line(args, work, 2, 2, replicate=True))
    say(f"replicate: job {job}, {TASKS} tasks x 2 iterations")
    wait_for(env, job, "the end", lambda f: f.get("JobState") == "COMPLETED", args.timeout, out)
    print(scripts_module(args, "check_run", str(work), "2", "slurm_replicate"), end="")
    print(scripts_module(args, "slots", str(work), "--replicate-dataset-per-gpu").splitlines()[-1])


def evaluate(env: dict[str, str], args: argparse.Namespace, checkpoint: Path) -> None:
    """tools/slurm_test.sh's srun line on `checkpoint`: it must print a finite mAP and NDS."""
    out = checkpoint.parent / "eval"
    shutil.rmtree(out, ignore_errors=True)
    cmd = test_line(args, checkpoint, out)
    say(f"evaluate: $ {shlex.join(cmd)}")
    tree = require_code_root("upstream_run")
    env = {**env, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.cpus_per_task)}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        output = done.stdout[-4000:] + done.stderr[-4000:]
        raise SmokeError(f"tools/test.py under srun failed ({done.returncode}):\n{output}")
    summary = read_metrics(out)
    print(format_metrics(summary))
    if not (math.isfinite(summary["mean_ap"]) and math.isfinite(summary["nd_score"])):
        raise SmokeError("evaluate: mAP or NDS is not finite")
