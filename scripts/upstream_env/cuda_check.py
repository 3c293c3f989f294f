"""`python -m upstream_env.cuda_check`, in the OpenMMLab env (`nox -s cuda_build` runs it): the env's
mmcv-full CUDA build holds a cubin for every arch it was built for and links torch's CUDA runtime,
`mmcv.ops` imports (on a host without GPU or driver too), the compiled ops are the reduced CUDA set
(or all of them) and a left-out op raises `OpNotCompiledError`. Where torch sees a GPU, the kept
ops also run there and match their PyTorch references. Prints one JSON summary; exit 1 on a failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import cuda_toolkit, op_set
from .build import read_stamp
from .errors import EnvBuildError
from .mmcv_wheel import check_cuda_library
from .paths import LOG_FILE
from .runlog import BuildLog


def _gpu_ops() -> dict:
    """The kept CUDA ops on the GPU against PyTorch references (float32; bounds from its eps)."""
    import torch
    from mmcv.ops import sigmoid_focal_loss
    from mmcv.ops.multi_scale_deform_attn import (
        MultiScaleDeformableAttnFunction,
        multi_scale_deformable_attn_pytorch,
    )

    torch.manual_seed(0)
    logits, labels = torch.randn(64, 10), torch.randint(0, 11, (64,))
    one_hot = torch.nn.functional.one_hot(labels, 11)[:, :10].float()
    p = logits.sigmoid()
    pt = (1 - p) * one_hot + p * (1 - one_hot)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(logits, one_hot, reduction="none")
    ref = (ref * (0.25 * one_hot + 0.75 * (1 - one_hot)) * pt.pow(2.0)).sum()
    got = sigmoid_focal_loss(logits.cuda(), labels.cuda(), 2.0, 0.25, None, "sum").cpu()
    shapes = torch.tensor([[8, 8], [4, 4]])
    starts = torch.cat((shapes.new_zeros(1), (shapes[:, 0] * shapes[:, 1]).cumsum(0)[:-1]))
    value = torch.randn(1, 80, 2, 8)
    loc, weight = torch.rand(1, 5, 2, 2, 4, 2), torch.rand(1, 5, 2, 2, 4).softmax(-1)
    attn = MultiScaleDeformableAttnFunction.apply(
        *(t.cuda() for t in (value, shapes, starts, loc, weight)), 64
    )
    attn_ref = multi_scale_deformable_attn_pytorch(value, shapes, loc, weight)
    eps = torch.finfo(torch.float32).eps
    focal_err = abs(got.item() - ref.item()) / abs(ref.item())
    attn_err = (attn.cpu() - attn_ref).abs().max().item() / attn_ref.abs().max().item()
    bound = 64 * eps * 10  # a sum of 640 float32 terms, relative: accumulated rounding
    if focal_err > bound or attn_err > 16 * eps * 8:  # bilinear sums of 16 weighted points
        raise EnvBuildError(
            f"CUDA ops disagree with PyTorch: focal {focal_err:.2e}, ms_deform_attn {attn_err:.2e}"
        )
    return {
        "device": torch.cuda.get_device_name(0),
        "focal_rel_err": focal_err,
        "ms_deform_attn_rel_err": attn_err,
    }


def check() -> dict:
    import mmcv._ext as ext
    import mmcv.ops
    import torch

    so = Path(ext.__file__)
    stamp = read_stamp(Path(sys.prefix)) or {}
    arches = tuple(stamp.get("arch_list") or cuda_toolkit.DEFAULT_ARCHES)
    log = BuildLog(LOG_FILE, total_steps=1)
    try:
        python = Path(sys.executable)
        toolkit = cuda_toolkit.choose(stamp.get("toolkit") or "auto", torch.version.cuda, python, log)
        tool = cuda_toolkit.cuobjdump(toolkit, python, log)
    finally:
        log.close()
    summary = {"library": str(so), "arches": list(arches), **check_cuda_library(so, tool, arches)}
    summary["compiling_cuda"] = mmcv.ops.get_compiling_cuda_version()
    if summary["compiling_cuda"] != torch.version.cuda:
        raise EnvBuildError(
            f"{so.name}: compiled for CUDA {summary['compiling_cuda']}, torch is {torch.version.cuda}"
        )
    if hasattr(ext, "OpNotCompiledError"):
        if list(ext.COMPILED_OPS) != list(op_set.kept_names(cuda=True)):
            raise EnvBuildError(f"{so.name}: compiled ops {ext.COMPILED_OPS}, not the CUDA set's")
        try:
            mmcv.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
            raise EnvBuildError("nms ran in a reduced build: it should raise OpNotCompiledError")
        except ext.OpNotCompiledError as exc:
            summary["left_out_op"] = str(exc).split(":")[0]
        summary["units"] = len(op_set.kept_units(cuda=True))  # the compile's units, for a node's plan
    summary["op_set"] = list(getattr(ext, "COMPILED_OPS", ["all"]))
    summary["gpu"] = _gpu_ops() if torch.cuda.is_available() else "no GPU visible: the ops ran nowhere"
    return summary


def main() -> int:
    try:
        summary = check()
    except EnvBuildError as exc:
        print(f"cuda_check: FAILED: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
