"""The patched tools/train.py and tools/test.py on a node whose driver is too old for the env's torch
(a stand-in libcuda.so.1 answering CUDA 12.2, loaded by the env's real CUDA 13 torch): both stop
before a process group or a model exists, naming the driver needed and the fix, where they used to
train and evaluate on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from driver_fakes import CHECKOUT, TOOLS, build_fake_libcuda, driver_env, stopped_tool_output

pytestmark = pytest.mark.stack


# `nox` stops tools/train.py here and tools/test.py in test_driver_check_ops_stack.py (each tool
# reaches the hook, each refusal is shown); the other pairing is a proof (`nox -s proofs`)
@pytest.mark.parametrize(
    "tool", [pytest.param(t, marks=() if t == "train" else pytest.mark.proof) for t in TOOLS]
)
def test_a_driver_too_old_for_torch_stops_the_tool_with_the_fix(tool: str, tmp_path: Path) -> None:
    lib = build_fake_libcuda(tmp_path / "driver")
    env = {**driver_env(lib, cuda_version=12020, devices=1), "PYTHONPATH": str(CHECKOUT)}
    out = stopped_tool_output(tool, tmp_path / "work", env)
    assert "found version 12020" in out  # torch's own view of this driver: too old, no GPU
    assert "driver_check: refusing to run: this host has an NVIDIA GPU and a driver for CUDA 12.2" in out
    assert "needs a driver >= 580.65.06" in out and "whl/cu126" in out
