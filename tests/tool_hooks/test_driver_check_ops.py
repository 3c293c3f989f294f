"""A GPU run refuses an mmcv without the CUDA ops it reaches (overlay/tools/tool_hooks/driver_check.py), by
name and before the model exists: the env's mmcv builds as `mmcv._ext` describes them (CPU ops, the
reduced CUDA set, a full CUDA build, a CUDA set short of one op), the refusal through
`require_usable_cuda` with faked GPU visibility, and the op list kept equal to the env builder's
CUDA op set."""

from __future__ import annotations

from types import ModuleType

import pytest
from driver_fakes import load_driver_check

# the env builder's op set; the GPU check kit carries tests/gpu without the builder, and these checks
# need no GPU: they run in the hermetic tier, not on the node
op_set = pytest.importorskip("upstream_env.op_set", reason="the env builder is not here (the GPU check kit)")

INFO = ("get_compiler_version", "get_compiling_cuda_version")


@pytest.fixture(scope="module")
def cc() -> ModuleType:
    return load_driver_check()


def test_the_op_list_is_the_env_builders_cuda_op_set(cc) -> None:
    """One list, two places (the overlay cannot import the env builder): they must agree."""
    needed = {op: names for op, (names, _) in cc.CUDA_OPS.items()}
    built = {op: names for op, (names, _) in op_set.KEPT_CUDA.items() if op not in op_set.KEPT}
    assert needed == built
    assert "sigmoid_focal_loss_forward" in needed["focal_loss"]


def test_each_mmcv_build_has_or_lacks_the_cuda_ops(cc) -> None:
    library = "/env/site-packages/mmcv/_ext.so"
    cpu_reduced = cc.MmcvOps("1.6.0", None, INFO, library)
    cuda_reduced = cc.MmcvOps("1.6.0", "13.0", op_set.kept_names(cuda=True), library)
    cuda_full = cc.MmcvOps("1.6.0", "13.0", None, library)
    no_attn = cc.MmcvOps(
        "1.6.0", "13.0", tuple(n for n in cuda_reduced.compiled if "deform" not in n), library
    )
    assert cc.missing_cuda_ops(cuda_reduced) == [] and cc.missing_cuda_ops(cuda_full) == []
    assert [n for n, _ in cc.missing_cuda_ops(no_attn)] == [
        "ms_deform_attn_forward",
        "ms_deform_attn_backward",
    ]
    assert len(cc.missing_cuda_ops(cpu_reduced)) == 6, "CPU ops only: none of them runs on a GPU"
    assert len(cc.missing_cuda_ops(cc.MmcvOps("1.6.0", None, None, library))) == 6, "a full CPU build too"
    cc.require_cuda_ops(cuda_reduced)
    cc.require_cuda_ops(None)  # no mmcv in this interpreter: nothing to check
    with pytest.raises(cc.CudaMismatchError) as refused:
        cc.require_cuda_ops(cpu_reduced)
    message = str(refused.value)
    assert "has no CUDA op 'sigmoid_focal_loss_forward' (mmdet's FocalLoss on CUDA tensors" in message
    assert "CPU ops only (get_compiling_cuda_version: not available)" in message and library in message
    assert "Fix: rebuild the env with mmcv's CUDA ops: nox -s upstream_env -- --cuda" in message
    with pytest.raises(cc.CudaMismatchError, match=r"no CUDA op 'ms_deform_attn_forward' \(RepDETR3D"):
        cc.require_cuda_ops(no_attn)


def test_a_gpu_run_on_cpu_ops_stops_in_the_driver_check(cc, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees the lent node's GPU (faked), the env's mmcv has CPU ops: `require_usable_cuda`, what
    tools/train.py and tools/test.py call first, exits naming the op; the same env with its GPUs
    hidden runs on the CPU; a CUDA build passes."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(cc, "probe_runtime", lambda uses_dali: cc.Runtime("2.11.0+cu130", "13.0", True))
    monkeypatch.setattr(cc, "probe_driver", lambda: cc.Driver("580.159.03", (13, 0), 1))
    monkeypatch.setattr(cc, "probe_mmcv_ops", lambda: cc.MmcvOps("1.6.0", None, INFO, "/env/_ext.so"))
    with pytest.raises(SystemExit, match=r"driver_check: refusing to run: .*'sigmoid_focal_loss_forward'"):
        cc.require_usable_cuda(quiet=True)
    cuda = cc.MmcvOps("1.6.0", "13.0", op_set.kept_names(cuda=True), "/env/_ext.so")
    monkeypatch.setattr(cc, "probe_mmcv_ops", lambda: cuda)
    assert cc.require_usable_cuda(quiet=True).startswith("GPU: driver 580.159.03")
    monkeypatch.setattr(cc, "probe_runtime", lambda uses_dali: cc.Runtime("2.11.0+cu130", "13.0", False))
    monkeypatch.setattr(cc, "probe_mmcv_ops", lambda: pytest.fail("no GPU run: the ops are not asked"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cc.require_usable_cuda(quiet=True).startswith("CPU: the GPUs are hidden")
