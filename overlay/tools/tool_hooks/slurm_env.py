"""The ``env://`` rendezvous variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``) of a task started by ``srun``, derived from SLURM's variables without touching CUDA,
unlike mmcv's ``init_dist('slurm')`` (stdlib only; where each comes from: docs/slurm.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

PORT_BASE, PORT_SPAN = 20000, 20000  # job_port() picks in [20000, 40000): below the ephemeral range


class SlurmEnvError(RuntimeError):
    """A task's SLURM variables are missing or malformed (the message names the variable)."""


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets: ``a[1,2],b`` -> ``['a[1,2]', 'b']``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise SlurmEnvError(f"node list {text!r}: unbalanced or nested brackets")
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SlurmEnvError(f"node list {text!r}: unbalanced brackets")
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand_range(spec: str, nodelist: str) -> list[str]:
    """``01-03,07`` -> ``['01', '02', '03', '07']`` (the width of a zero-padded start is kept)."""
    out = []
    for item in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not m:
            raise SlurmEnvError(f"node list {nodelist!r}: bad range {item!r}")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise SlurmEnvError(f"node list {nodelist!r}: range {item!r} runs backwards")
        out += [str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1)]
    return out


def expand_hostlist(nodelist: str) -> list[str]:
    """The host names of a SLURM host list, in order, as ``scontrol show hostnames`` prints them:
    ``node[01-04,07]``, ``a,b[1-2]``, ``rack[1-2]-gpu[1,3]`` (several brackets: every combination,
    the last bracket varying fastest)."""
    hosts: list[str] = []
    for part in _split_top_level(nodelist.strip()):
        names = [""]
        for literal, spec in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", part):
            names = [n + literal for n in names]
            if spec:
                names = [n + suffix for n in names for suffix in _expand_range(spec, nodelist)]
        hosts += names
    if not hosts:
        raise SlurmEnvError(f"node list {nodelist!r}: no host")
    return hosts


def first_host(nodelist: str, scontrol: str | None = None) -> str:
    """The first host of ``nodelist``: from ``scontrol show hostnames`` when ``scontrol`` (a path)
    is given and answers, else from :func:`expand_hostlist`."""
    if scontrol:
        proc = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True, text=True)
        names = proc.stdout.split()
        if proc.returncode == 0 and names:
            return names[0]
    return expand_hostlist(nodelist)[0]


def job_port(job_id: int, step_id: int) -> int:
    """A port in [PORT_BASE, PORT_BASE + PORT_SPAN) that every task of a step computes alike;
    consecutive steps and jobs get different ports."""
    return PORT_BASE + (job_id * 97 + step_id) % PORT_SPAN


def _int(environ: Mapping[str, str], name: str) -> int:
    if name not in environ:
        raise SlurmEnvError(f"--launcher slurm: ${name} is not set (start the tasks with srun)")
    try:
        return int(environ[name])
    except ValueError:
        raise SlurmEnvError(f"--launcher slurm: ${name}={environ[name]!r} is not an integer") from None


def _port(environ: Mapping[str, str]) -> int:
    if "MASTER_PORT" in environ:
        return _int(environ, "MASTER_PORT")
    reserved = environ.get("SLURM_STEP_RESV_PORTS", "")
    if reserved:
        return int(re.split(r"[-,]", reserved)[0])
    step = environ.get("SLURM_STEP_ID", "0")
    return job_port(_int(environ, "SLURM_JOB_ID"), int(step) if step.isdigit() else 0)


def slurm_dist_env(environ: Mapping[str, str], scontrol: str | None = None) -> dict[str, str]:
    """RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT of the task whose environment is
    ``environ`` (see the module docstring for where each comes from)."""
    rank, world_size = _int(environ, "SLURM_PROCID"), _int(environ, "SLURM_NTASKS")
    local_rank = _int(environ, "SLURM_LOCALID")
    if not 0 <= rank < world_size:
        raise SlurmEnvError(f"--launcher slurm: SLURM_PROCID={rank} outside SLURM_NTASKS={world_size}")
    addr = environ.get("MASTER_ADDR")
    if not addr:
        nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_NODELIST")
        if not nodelist:
            raise SlurmEnvError("--launcher slurm: $SLURM_NODELIST is not set (start the tasks with srun)")
        addr = first_host(nodelist, scontrol)
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_RANK": str(local_rank),
        "MASTER_ADDR": addr,
        "MASTER_PORT": str(_port(environ)),
    }


def export_slurm_dist_env() -> dict[str, str]:
    """Put :func:`slurm_dist_env` of this process into ``os.environ``; return it."""
    derived = slurm_dist_env(os.environ, shutil.which("scontrol"))
    os.environ.update(derived)
    return derived
