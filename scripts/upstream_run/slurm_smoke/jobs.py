"""SLURM jobs of the smoke run: the sbatch script, submit, poll the job's state, read its output
per start (the job's output file is appended to over the restarts)."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from overlaytool import require_code_root

from .command_lines import TASKS
from .progress import SmokeError

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
