"""The SLURM and munge programs a local SLURM needs: which are missing, whether one can start here,
installing them with apt-get (``python -m slurm_local install``), and where each one is."""

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


def is_root() -> bool:
    """Whether this process runs as root (a local SLURM and its install need it)."""
    return os.name == "posix" and os.geteuid() == 0


def why_not_startable() -> str | None:
    """None when a local SLURM can be started (programs installed, running as root), else why not."""
    if not is_root():
        return "a local SLURM needs root (slurmd runs the tasks as their user)"
    missing = missing_programs()
    if not missing:
        return None
    if not shutil.which("apt-get"):
        how = f"no apt-get here: install {' and '.join(APT_PACKAGES)} with the system's packager"
    else:
        how = f"`nox -s tests` or `python -m slurm_local install` installs {' and '.join(APT_PACKAGES)}"
    return f"not installed: {', '.join(missing)} ({how})"


def ensure_installed(apt_get: str | None = None) -> None:
    """Install slurm-wlm and munge with ``apt_get`` (default: the one on PATH; `update` first) when a
    program is missing; SlurmUnavailable naming why when that cannot be done here (not root, no
    apt-get, apt failed)."""
    missing = missing_programs()
    if not missing:
        return
    if not is_root():
        raise SlurmUnavailable(f"not installed: {', '.join(missing)}, and installing them needs root")
    apt_get = apt_get or shutil.which("apt-get")
    if not apt_get or not os.access(apt_get, os.X_OK):
        raise SlurmUnavailable(f"no apt-get: install {', '.join(APT_PACKAGES)} with the system's packager")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt_get, "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES]
    for cmd in ([apt_get, "update", "-qq"], install):
        done = subprocess.run(cmd, env=env)
        if done.returncode != 0:
            raise SlurmUnavailable(f"`{' '.join(cmd)}` failed (exit {done.returncode})")
    if still := missing_programs():
        raise SlurmUnavailable(
            f"after installing {' '.join(APT_PACKAGES)}, still missing: {', '.join(still)}"
        )


def program_path(name: str) -> str:
    """Where the program ``name`` is (PATH, then /usr/sbin and /sbin); SlurmUnavailable when nowhere."""
    found = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if not found:
        raise SlurmUnavailable(f"{name} is not installed")
    return found
