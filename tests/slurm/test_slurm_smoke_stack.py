"""Stack tier: the SLURM smoke run (`nox -s slurm_smoke`, scripts/upstream_run/slurm_smoke.py) on a
real SLURM, its quick form: 2 srun tasks train 3 iterations with the DALI loader through
`--launcher slurm`, sharded; warned by SIGUSR1 after the first, the job checkpoints, requeues
itself and finishes on the exact stream; then tools/test.py evaluates under srun. Skips with one
line when no SLURM answers and none can be started here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from slurm_local.programs import why_not_startable

REPO_ROOT = Path(__file__).resolve().parents[2]
REASON = why_not_startable()
pytestmark = [
    pytest.mark.stack,
    pytest.mark.slow,
    pytest.mark.skipif(REASON is not None, reason=f"slurm smoke skipped: {REASON}"),
]


def test_srun_trains_warned_and_requeued_on_the_exact_stream_and_evaluates(
    synthetic_dataset: Path, tmp_path: Path
) -> None:
    cmd = [sys.executable, "-m", "upstream_run", "slurm_smoke", "--data-root", str(synthetic_dataset)]
    cmd += ["--work-dir", str(tmp_path / "smoke"), "--python", sys.executable, "--timeout", "600"]
    cmd += ["--quick", "--iters", "3"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    assert "saved on the signal, the job requeued itself" in out
    assert "shard: 2 starts, each requeued one resumed from an iter_N.pth" in out
    assert "all losses finite" in out and "slurm_shard: checkpoint iter_3.pth:" in out
    assert "split checked: sharded" in out
    assert "slots: identical: 2 rank(s), 6 rank-iterations" in out  # the resumed run vs straight
    assert "mAP:" in out and "NDS:" in out
