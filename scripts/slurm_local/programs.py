"""The SLURM and munge programs a local SLURM needs: which are missing, whether one can start here,
installing them with apt-get, and where each one is."""

from __future__ import annotations

import os
import shutil
import subprocess

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("srun", "sbatch", "sinfo", "scontrol", "squeue", "scancel")
APT_PACKAGES = ("slurm-wlm", "munge")


class SlurmUnavailable(RuntimeError):
    """SLURM cannot be started here (the message says what is missing)."""


def missing_programs() -> list[str]:
    """The SLURM/munge programs not found on PATH (nor in /usr/sbin)."""
    path = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"
    return [p for p in (*DAEMONS, *CLIENTS) if not shutil.which(p, path=path)]


def why_not_startable() -> str | None:
    """None when a local SLURM can be started (programs installed, running as root), else why not."""
    if os.name != "posix" or os.geteuid() != 0:
        return "a local SLURM needs root (slurmd runs the tasks as their user)"
    missing = missing_programs()
    if missing:
        return f"not installed: {', '.join(missing)} (apt-get install {' '.join(APT_PACKAGES)})"
    return None


def install_with_apt() -> None:
    """`apt-get update` once, then install slurm-wlm and munge (root, Debian/Ubuntu)."""
    if not shutil.which("apt-get"):
        raise SlurmUnavailable(f"no apt-get: install {', '.join(APT_PACKAGES)} with the system's packager")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES]
    subprocess.run(install, check=True, env=env)


def program_path(name: str) -> str:
    """Where the program ``name`` is (PATH, then /usr/sbin and /sbin); SlurmUnavailable when nowhere."""
    found = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if not found:
        raise SlurmUnavailable(f"{name} is not installed")
    return found
