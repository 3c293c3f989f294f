"""Stack tier: the real-data recipe of docs/training.md on a CPU host, kept short for CI.

One training run serves every test: upstream's `tools/dist_train.sh` with 2 CPU processes (gloo) and
the small DALI config, 1 iteration. `nox -s evaluate`'s runner then evaluates its checkpoint with
tools/test.py (the CPU path patched in), in one process and in two gloo processes, picking the config
train.py dumped beside the checkpoint, and must print finite mAP/NDS from nuscenes-devkit with a
result for every val sample.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stack_runs import REPO_ROOT
from upstream_run.train import free_port

pytestmark = [pytest.mark.stack, pytest.mark.slow]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"


@pytest.fixture(scope="module")
def dist_trained(tmp_path_factory: pytest.TempPathFactory, synthetic_dataset: Path) -> tuple[Path, str]:
    """Work dir and output of `tools/dist_train.sh <small DALI config> 2` (1 iteration, CPU, gloo)."""
    work = tmp_path_factory.mktemp("dist_train")
    data = synthetic_dataset
    options = [
        "runner.max_iters=1",
        "checkpoint_config.interval=1",
        f"data.train.data_root={data}/",
        f"data.train.ann_file={data}/nuscenes2d_temporal_infos_train.pkl",
        "data_loading_config.log_slots=True",
    ]
    cmd = ["bash", "tools/dist_train.sh", CONFIG, "2", "--work-dir", str(work), "--no-validate"]
    cmd += ["--cfg-options", *options]
    # As docs/training.md says: the env's python first on PATH (the script calls `python`), a free port.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "PORT": str(free_port())}
    proc = subprocess.run(cmd, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=1200)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return work, output


def test_dist_train_sh_runs_two_cpu_processes(dist_trained: tuple[Path, str]) -> None:
    work, output = dist_trained
    assert "Iter [1/1]" in output, output[-3000:]
    assert (work / "iter_1.pth").is_file() and (work / Path(CONFIG).name).is_file()
    for rank in (0, 1):  # each rank's DALI loader logged the (scene, frame) of its batch slot
        lines = (work / f"slots_rank{rank}.jsonl").read_text().splitlines()
        assert len(lines) >= 1, f"rank {rank} logged no batch"


@pytest.mark.parametrize("gpus", [1, 2])
def test_evaluate_prints_finite_map_and_nds_for_a_fresh_checkpoint(
    dist_trained: tuple[Path, str], synthetic_dataset: Path, tmp_path: Path, gpus: int
) -> None:
    work, _ = dist_trained
    out = tmp_path / "eval"
    cmd = [sys.executable, "-m", "upstream_run", "evaluate", str(work / "iter_1.pth")]
    cmd += ["--data-root", str(synthetic_dataset), "--gpus", str(gpus), "--out", str(out)]
    cmd += ["--python", sys.executable]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert f"with {Path(CONFIG).name}" in output, "the config dumped beside the checkpoint"
    scores = {k: float(v) for k, v in re.findall(r"^(mAP|NDS): (\S+)$", proc.stdout, re.MULTILINE)}
    assert set(scores) == {"mAP", "NDS"} and all(math.isfinite(v) and 0 <= v <= 1 for v in scores.values())
    assert re.search(r"^car\s+\d\.\d{4}", proc.stdout, re.MULTILINE), "the per-class table"
    results = json.loads((out / "pts_bbox" / "results_nusc.json").read_text())["results"]
    with open(synthetic_dataset / "nuscenes2d_temporal_infos_val.pkl", "rb") as f:
        tokens = {info["token"] for info in pickle.load(f)["infos"]}
    assert set(results) == tokens, "a result for every val sample, from every rank"
    summary = json.loads((out / "pts_bbox" / "metrics_summary.json").read_text())
    # the log prints NDS with 4 decimals: half a unit of the last one, and the float64 parse
    assert math.isclose(summary["nd_score"], scores["NDS"], abs_tol=5e-5 + 1e-15)
