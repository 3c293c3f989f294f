"""The patched tools/train.py and tools/test.py on the env's real mmcv with CPU ops where torch sees
a GPU (faked: `torch.cuda.is_available` answers True, as on the lent node): both stop before a
process group or a model exists, naming the first CUDA op the configs reach, the env's build and
`nox -s upstream_env -- --cuda`, where they used to fail at the first iteration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from driver_fakes import CHECKOUT, TOOLS, load_driver_check, stopped_tool_output

pytestmark = pytest.mark.stack
SEES_A_GPU = "import torch\ntorch.cuda.is_available = lambda: True  # the test's faked visibility\n"


# `nox` stops tools/test.py here and tools/train.py in test_driver_check_stack.py (each tool
# reaches the hook, each refusal is shown); the other pairing is a proof (`nox -s proofs`)
@pytest.mark.parametrize(
    "tool", [pytest.param(t, marks=() if t == "test" else pytest.mark.proof) for t in TOOLS]
)
def test_a_gpu_run_on_cpu_ops_stops_naming_the_op_and_the_fix(tool: str, tmp_path: Path) -> None:
    ops = load_driver_check().probe_mmcv_ops()
    if ops is None or ops.cuda is not None:
        pytest.skip(f"this env's mmcv has CUDA ops ({ops}); the refusal needs the CPU-ops env")
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "sitecustomize.py").write_text(SEES_A_GPU)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), str(CHECKOUT)])
    out = stopped_tool_output(tool, tmp_path / "work", env)
    assert (
        "driver_check: refusing to run: torch sees a GPU, but the env's mmcv-full 1.6.0 has no CUDA op "
        in out
    )
    assert "'sigmoid_focal_loss_forward' (mmdet's FocalLoss on CUDA tensors (every config))" in out
    assert "CPU ops only (get_compiling_cuda_version: not available)" in out
    assert "nox -s upstream_env -- --cuda" in out
    assert "OpNotCompiledError" not in out
