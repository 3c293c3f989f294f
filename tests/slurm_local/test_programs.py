"""Installing SLURM for the tests (`python -m slurm_local install`, which `nox -s tests` runs and
`nox -s slurm_smoke` shares): where it cannot be done the reason is named, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from slurm_local import LocalSlurm
from slurm_local.programs import (
    SlurmUnavailable,
    ensure_installed,
    is_root,
    missing_programs,
    why_not_startable,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_without_apt_get_the_reason_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with no apt-get and no SLURM clients (the daemons may still be found in /usr/sbin)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "srun" in missing_programs()
    reason = why_not_startable()
    if is_root():
        assert reason.startswith("not installed: ") and "srun" in reason and "no apt-get here" in reason
    else:
        assert "needs root" in reason
    with pytest.raises(SlurmUnavailable, match="no apt-get" if is_root() else "needs root"):
        ensure_installed()
    with pytest.raises(SlurmUnavailable, match="no apt-get" if is_root() else "needs root"):
        LocalSlurm(install=True)  # the smoke run's --install: the same install, before any daemon
    LocalSlurm()  # without it, nothing is installed (nor started) until the block
    done = subprocess.run(
        [sys.executable, "-m", "slurm_local", "install"],
        env={"PATH": str(tmp_path), "PYTHONPATH": str(REPO_ROOT / "scripts")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("slurm_local: ") and len(done.stderr.splitlines()) == 1, done.stderr


def test_an_installed_slurm_is_left_as_it_is() -> None:
    """Where every program is there (after `nox -s tests` installed them), nothing runs apt-get."""
    if missing_programs():
        with pytest.raises(SlurmUnavailable):
            ensure_installed(apt_get="/nonexistent/apt-get")
    else:
        ensure_installed(apt_get="/nonexistent/apt-get")  # would fail if it tried to install
