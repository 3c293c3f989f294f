"""Stack tier: in an env built with a reduced mmcv op set (CPU or CUDA), the kept ops work and an op left out,
called through mmcv or mmdet3d as a model would, raises `mmcv._ext.OpNotCompiledError` naming the
op and `--full-ops`: no segfault, no AttributeError from deep inside mmdet3d.

Skipped in an env built with `--full-ops` (every op is compiled there).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from upstream_env import op_set

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = REPO_ROOT / ".nox" / "_env" / "upstream" / "bin" / "python"
pytestmark = pytest.mark.stack

CALLS = """
import torch
import mmcv._ext as ext
import mmcv.ops
from mmdet3d.ops import Voxelization

if not hasattr(ext, "OpNotCompiledError"):
    print("FULL")
    raise SystemExit(0)
print("COMPILED", ",".join(ext.COMPILED_OPS))
print("VERSION", mmcv.ops.get_compiler_version(), mmcv.ops.get_compiling_cuda_version())
print("BASE", ext.OpNotCompiledError.__mro__[1].__name__)
voxel = Voxelization(voxel_size=[0.5, 0.5, 4.0], point_cloud_range=[0, 0, -2, 10, 10, 2],
                     max_num_points=4, max_voxels=100)
try:
    voxel(torch.rand(50, 4) * 5)
except ext.OpNotCompiledError as exc:
    print("VOXEL", exc)
try:
    mmcv.ops.RoIAlign((2, 2), 1.0)(torch.rand(1, 1, 4, 4), torch.tensor([[0.0, 0.0, 0.0, 2.0, 2.0]]))
except NotImplementedError as exc:
    print("ROIALIGN", type(exc).__name__, exc)
"""


def test_a_left_out_op_raises_the_named_error_only_when_called() -> None:
    proc = subprocess.run(
        [str(PYTHON), "-c", textwrap.dedent(CALLS)],
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"exit {proc.returncode} (a crash is negative)\n{proc.stderr[-4000:]}"
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    if "FULL" in proc.stdout.split():
        pytest.skip("this env's mmcv-full has every op (--full-ops)")
    cuda = not lines["VERSION"].endswith("not available")  # get_compiling_cuda_version of a CPU build
    assert lines["COMPILED"].split(",") == list(op_set.kept_names(cuda)), "the CUDA set on a CUDA build"
    assert lines["VERSION"].startswith("GCC"), "a kept op runs"
    assert lines["BASE"] == "NotImplementedError"
    for key, op in (
        ("VOXEL", "hard_voxelize_forward"),
        ("ROIALIGN", "OpNotCompiledError mmcv op 'roi_align"),
    ):
        assert key in lines, f"{key}: the call did not raise the named error\n{proc.stdout}"
        assert op in lines[key] and op_set.FULL_OPS_HINT in lines[key], lines[key]


def test_the_compiled_ops_carry_no_debug_info() -> None:
    """The builder compiles mmcv's ops with ``-g0`` after Python's own ``-g`` (``mmcv_wheel.py``): the
    same code, the reduced CPU set's compile 47 -> 31 s on 2 cores and its wheel 4.3 -> 1.2 MB. A build
    that lost the flag leaves ``.debug_*`` sections in the ``_ext`` library."""
    (folder,) = importlib.util.find_spec("mmcv").submodule_search_locations
    (ext,) = Path(folder).glob("_ext*.so")
    readelf = ["readelf", "--section-headers", "--wide", str(ext)]
    sections = subprocess.run(readelf, capture_output=True, text=True, check=True).stdout
    assert " .text " in sections and ".debug_info" not in sections, sections
