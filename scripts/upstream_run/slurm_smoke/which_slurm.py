"""The SLURM the smoke run uses: the one that answers, else a single-node one started on this host."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping

from .progress import SmokeError, say

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
