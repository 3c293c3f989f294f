"""Stack tier: two real StreamPETR training iterations on CPU, finite losses, a checkpoint that loads.

Trains with the original PyTorch DataLoader on the synthetic data set (the small 128x352 CPU smoke
config keeps this near a minute on 2 cores), through the same driver `nox -s train_torch` uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from stack_runs import CHECKOUT, REPO_ROOT

pytestmark = [pytest.mark.stack, pytest.mark.slow]
ITERS = 2


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, synthetic_dataset: Path) -> tuple[Path, str]:
    """Work dir and console output of a 2-iteration run."""
    work_dir = tmp_path_factory.mktemp("train_torch")
    cmd = [
        sys.executable, "-m", "upstream_run", "train", "--iters", str(ITERS), "--config", "small",
        "--data-root", str(synthetic_dataset), "--work-dir", str(work_dir), "--workers", "0",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return work_dir, output


def test_two_iterations_with_finite_losses(trained: tuple[Path, str]) -> None:
    work_dir, output = trained
    assert f"{ITERS} iterations" in output and "all losses finite" in output
    assert "Iter [2/2]" in output, "the text logger prints every iteration"
    assert "data_time" in output and "loss" in output


def test_checkpoint_loads_into_the_model(trained: tuple[Path, str]) -> None:
    """In this process (the OpenMMLab env's, as every stack test): no interpreter of its own to start."""
    work_dir, _ = trained
    ckpt = work_dir / f"iter_{ITERS}.pth"
    sys.path.insert(0, str(CHECKOUT))
    import projects.mmdet3d_plugin  # noqa: F401 - registers the plugin's modules
    from mmcv import Config
    from mmcv.runner import load_checkpoint
    from mmdet3d.models import build_model

    cfg = Config.fromfile(str(CHECKOUT / "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py"))
    model = build_model(cfg.model, train_cfg=cfg.get("train_cfg"), test_cfg=cfg.get("test_cfg"))
    loaded = load_checkpoint(model, str(ckpt), map_location="cpu", strict=True)
    assert tuple(loaded["meta"]["CLASSES"]) == tuple(cfg.class_names), loaded["meta"].get("CLASSES")
