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
import contextlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from overlaytool import require_code_root
from upstream_env import env_python

from .evaluate import VAL_INFOS, format_metrics, read_metrics
from .train import parse_args as train_args
from .train import train_script

T0 = time.monotonic()


def say(message: str) -> None:
    """A progress line, with the seconds since the start."""
    print(f"slurm_smoke [{time.monotonic() - T0:4.0f} s]: {message}", flush=True)


class SmokeError(Exception):
    """A check of the smoke run failed (the message says which and shows the job's output)."""


RENDEZVOUS_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def slurm_answers(env: dict[str, str], partition: str) -> bool:
    """Whether a SLURM controller answers and runs a task in `partition`."""
    if not shutil.which("srun"):
        return False
    try:
        done = subprocess.run(
            ["srun", "-p", partition, "-n1", "--immediate=10", "true"],
            env=env,
            capture_output=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def without_rendezvous(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less the launcher variables a surrounding run may have set: srun passes the
    submitter's environment on, and tools/tool_hooks/slurm_env.py keeps a MASTER_ADDR/MASTER_PORT it finds
    (as mmcv's SLURM init does), so an inherited one would send the smoke job's tasks elsewhere."""
    return {k: v for k, v in environ.items() if k not in RENDEZVOUS_VARS}


@contextlib.contextmanager
def slurm(partition: str, install: bool) -> Iterator[dict[str, str]]:
    """The environment of a SLURM that answers: the running one, else a local one started for the
    block (and stopped after it, also on failure); a `SmokeError` naming why none can start here."""
    from slurm_local import LocalSlurm

    if slurm_answers(dict(os.environ), partition):
        say(f"using the running SLURM (partition {partition})")
        yield without_rendezvous(os.environ)
        return
    if partition != "cpu":
        raise SmokeError(f"no SLURM answers for partition {partition}; a local one only has partition cpu")
    try:
        local = LocalSlurm(install=install)  # apt-get install slurm-wlm munge first when asked and missing
        started = time.monotonic()
        with local:
            say(f"started a local SLURM in {time.monotonic() - started:.0f} s")
            yield without_rendezvous(local.env)
    except LocalSlurm.Unavailable as exc:
        raise SmokeError(str(exc)) from None
    say("stopped the local SLURM (munged, slurmctld, slurmd)")


SLURM_CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali_slurm.py"
TASKS = 2


def train_line(
    args: argparse.Namespace, work_dir: Path, iters: int, interval: int, replicate: bool
) -> list[str]:
    """`python -u tools/train.py <slurm smoke config> ... --launcher=slurm --auto-resume` for srun."""
    argv = ["--loader", "dali", "--config", SLURM_CONFIG, "--data-root", str(args.data_root)]
    argv += ["--work-dir", str(work_dir), "--iters", str(iters), "--auto-resume"]
    argv += ["--replicate-dataset-per-gpu"] if replicate else []
    argv += ["--cfg-options", f"checkpoint_config.interval={interval}", "checkpoint_config.max_keep_ckpts=-1"]
    return [str(args.python), "-u", *train_script(train_args(argv)), "--launcher=slurm"]


def test_line(args: argparse.Namespace, checkpoint: Path, out: Path) -> list[str]:
    """tools/slurm_test.sh's srun line without --gres (a CPU partition has no GPUs to ask for)."""
    data = args.data_root.resolve()
    srun = ["srun", "-p", args.partition, "--job-name=slurm_smoke_test", f"--ntasks={TASKS}"]
    srun += [f"--ntasks-per-node={TASKS}", f"--cpus-per-task={args.cpus_per_task}", "--kill-on-bad-exit=1"]
    test = ["tools/test.py", SLURM_CONFIG, str(checkpoint), "--launcher=slurm", "--eval", "bbox"]
    test += ["--cfg-options", f"data.test.data_root={data}/", f"data.test.ann_file={data / VAL_INFOS}"]
    test += ["--eval-options", f"jsonfile_prefix={out}"]
    return [*srun, str(args.python), "-u", *test]


ENDED = ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


def run(env: dict[str, str], *cmd: str) -> str:
    """A SLURM command's output (sbatch, scontrol, scancel); SmokeError naming it when it fails."""
    done = subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SmokeError(f"{shlex.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def job_fields(env: dict[str, str], job: str) -> dict[str, str]:
    """`scontrol show job`'s Key=Value fields (JobState, Restarts, ...)."""
    out = run(env, "scontrol", "show", "job", job)
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", out))


def wait_for(
    env: dict[str, str],
    job: str,
    what: str,
    ready: Callable[[dict[str, str]], bool],
    timeout: float,
    out: Path,
) -> dict[str, str]:
    """Poll the job until `ready(fields)`; fail when it ends another way or after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        fields = job_fields(env, job)
        if ready(fields):
            return fields
        if fields.get("JobState") in ENDED:
            raise SmokeError(f"job {job} ended {fields['JobState']} waiting for {what}:\n{tail(out)}")
        if fields.get("JobState") == "PENDING" and fields.get("Reason") == "BeginTime":
            run(env, "scontrol", "update", f"JobId={job}", "StartTime=now")  # skip the requeue delay
        if time.monotonic() > deadline:
            raise SmokeError(f"job {job}: no {what} after {timeout:.0f} s:\n{tail(out)}")
        time.sleep(1.0)


def tail(path: Path, lines: int = 60) -> str:
    """The last `lines` lines of a job's output ("" before it exists)."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def segment(out: Path, start: int) -> str:
    """The job output written since its `start`-th start (0: the first)."""
    text = out.read_text(errors="replace") if out.exists() else ""
    marker = f"slurm_smoke: start {start} of job"
    return text[text.index(marker) :] if marker in text else ""


def batch_script(args: argparse.Namespace, work_dir: Path, command: list[str]) -> str:
    """The sbatch script: requeueable, SIGUSR1 120 s before the time limit, output appended over
    the restarts, the tasks started by srun in the checkout, PyTorch's threads = the task's CPUs."""
    tree = shlex.quote(str(require_code_root("upstream_run")))
    return f"""#!/bin/bash
#SBATCH --job-name=slurm_smoke
#SBATCH --partition={args.partition}
#SBATCH --ntasks={TASKS}
#SBATCH --cpus-per-task={args.cpus_per_task}
#SBATCH --requeue
#SBATCH --signal=USR1@120
#SBATCH --open-mode=append
#SBATCH --output={work_dir}/slurm-%j.out
echo "slurm_smoke: start ${{SLURM_RESTART_COUNT:-0}} of job $SLURM_JOB_ID"
cd {tree}
export PYTHONPATH={tree} OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
srun --kill-on-bad-exit=1 {shlex.join(command)}
"""


def submit(
    env: dict[str, str], args: argparse.Namespace, work_dir: Path, command: list[str]
) -> tuple[str, Path]:
    """sbatch `command` from a fresh `work_dir`: the job id and its output file."""
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    script = work_dir / "train.sbatch"
    script.write_text(batch_script(args, work_dir, command))
    job = run(env, "sbatch", "--parsable", str(script)).strip().split(";")[0]
    return job, work_dir / f"slurm-{job}.out"


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
