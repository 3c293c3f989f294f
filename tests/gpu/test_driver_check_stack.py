"""The patched tools/train.py and tools/test.py on a node whose driver is too old for the env's torch
(a stand-in libcuda.so.1 answering CUDA 12.2, loaded by the env's real CUDA 13 torch): both stop
before a process group or a model exists, naming the driver needed and the fix, where they used to
train and evaluate on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from driver_fakes import build_fake_libcuda, driver_env

pytestmark = pytest.mark.stack
CHECKOUT = Path(__file__).resolve().parents[2] / "upstream" / "StreamPETR"
CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_dali.py"
COMMANDS = {
    "train": ["tools/train.py", CONFIG, "--work-dir", "{work}"],
    "test": ["tools/test.py", CONFIG, "{work}/no-checkpoint-needed.pth", "--eval", "bbox"],
}


@pytest.mark.parametrize("tool", sorted(COMMANDS))
def test_a_driver_too_old_for_torch_stops_the_tool_with_the_fix(tool: str, tmp_path: Path) -> None:
    lib = build_fake_libcuda(tmp_path / "driver")
    env = {**driver_env(lib, cuda_version=12020, devices=1), "PYTHONPATH": str(CHECKOUT)}
    args = [a.replace("{work}", str(tmp_path / "work")) for a in COMMANDS[tool]]
    proc = subprocess.run(
        [sys.executable, *args], cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "found version 12020" in out  # torch's own view of this driver: too old, no GPU
    assert "driver_check: refusing to run: this host has an NVIDIA GPU and a driver for CUDA 12.2" in out
    assert "needs a driver >= 580.65.06" in out and "whl/cu126" in out
    assert "Traceback" not in out and "Iter [" not in out
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())
