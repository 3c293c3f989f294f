"""Upstream tier: StreamPETR's own converter, run on our tables, reproduces our info pickles.

Two variants: with the real OpenMMLab env (stack tier), and with the pinned checkout only, where small
stand-ins replace the four mmcv helpers and the two mmdet3d names the converter imports.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
STREAMPETR = REPO_ROOT / "upstream" / "StreamPETR"
UPSTREAM_PYTHON = REPO_ROOT / ".nox" / "_env" / "upstream" / "bin" / "python"


def _compare(ours: object, theirs: object, where: str) -> None:
    if isinstance(ours, dict):
        assert isinstance(theirs, dict) and list(ours) == list(theirs), (where, list(ours), list(theirs))
        for key in ours:
            _compare(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _compare(a, b, f"{where}[{i}]")
    elif isinstance(ours, np.ndarray):
        assert isinstance(theirs, np.ndarray), where
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (where, ours.dtype, theirs.dtype)
        if ours.dtype.kind in "fc":
            np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-6, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(ours, float):
        assert isinstance(theirs, float) and abs(ours - theirs) <= 1e-4, (where, ours, theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


@pytest.mark.upstream
@pytest.mark.stack
def test_streampetr_converter_reproduces_our_infos(tmp_path: Path) -> None:
    missing = [
        f"{what} ({path.relative_to(REPO_ROOT)})"
        for what, path in (
            ("the OpenMMLab env, `nox -s upstream_env`", UPSTREAM_PYTHON),
            ("the StreamPETR checkout, `nox -s apply`", STREAMPETR / "tools" / "create_data_nusc.py"),
            ("mmdetection3d inside the checkout", STREAMPETR / "mmdetection3d" / "mmdet3d"),
        )
        if not path.exists()
    ]
    if missing:
        pytest.skip("converter test needs " + "; ".join(missing))
    probe = subprocess.run(
        [str(UPSTREAM_PYTHON), "-c", "import mmcv, mmdet3d, nuscenes, shapely, pyquaternion"],
        cwd=STREAMPETR / "mmdetection3d",
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"converter test needs a complete OpenMMLab env (`nox -s upstream_env`): {last}")
    _run_and_compare(tmp_path, UPSTREAM_PYTHON, {"PYTHONPATH": str(STREAMPETR / "mmdetection3d")})


MMCV_STUB = """
import os, pickle
import cv2
def track_iter_progress(x): return x
def check_file_exist(p): assert os.path.isfile(p), p
def is_filepath(x): return isinstance(x, str)
def imread(p):
    img = cv2.imread(p)
    assert img is not None, p
    return img
def dump(obj, path):
    with open(path, "wb") as f: pickle.dump(obj, f, protocol=2)
"""
BBOX_STUB = """
import numpy as np
def points_cam2img(points, proj, with_depth=False):
    points = np.asarray(points, dtype=np.float64)
    view = np.eye(4)
    view[:3, :3] = proj
    p = np.concatenate([points, np.ones(points.shape[:-1] + (1,))], -1) @ view.T
    uv = p[..., :2] / p[..., 2:3]
    return np.concatenate([uv, p[..., 2:3]], -1) if with_depth else uv
"""
DATASETS_STUB = """
from synthdata.catalog import NAME_MAPPING
class NuScenesDataset:
    NameMapping = NAME_MAPPING
"""


@pytest.mark.upstream
def test_streampetr_converter_with_stand_ins(tmp_path: Path) -> None:
    if not (STREAMPETR / "tools" / "data_converter" / "nuscenes_converter.py").exists():
        pytest.skip("converter test needs the StreamPETR checkout (`nox -s apply`)")
    pytest.importorskip("nuscenes.nuscenes", reason="needs nuscenes-devkit")
    pytest.importorskip("shapely", reason="needs shapely")
    pytest.importorskip("cv2", reason="needs opencv")
    stubs = tmp_path / "stubs"
    for rel, text in (
        ("mmcv/__init__.py", MMCV_STUB),
        ("mmdet3d/__init__.py", ""),
        ("mmdet3d/core/__init__.py", ""),
        ("mmdet3d/core/bbox/__init__.py", BBOX_STUB),
        ("mmdet3d/datasets/__init__.py", DATASETS_STUB),
    ):
        (stubs / rel).parent.mkdir(parents=True, exist_ok=True)
        (stubs / rel).write_text(textwrap.dedent(text))
    path = os.pathsep.join([str(stubs), str(REPO_ROOT / "scripts")])
    _run_and_compare(tmp_path, Path(sys.executable), {"PYTHONPATH": path})


def _run_and_compare(tmp_path: Path, python: Path, extra_env: dict[str, str]) -> None:
    from synthdata import ensure_dataset

    root = ensure_dataset(tmp_path / "nuscenes", scenes=3, samples_per_scene=3, seed=11)
    ours = {}
    for split in ("train", "val"):
        pkl = root / f"nuscenes2d_temporal_infos_{split}.pkl"
        with open(pkl, "rb") as f:
            ours[split] = pickle.load(f)
        pkl.rename(pkl.with_suffix(".ours"))
    env = {**os.environ, **extra_env}
    proc = subprocess.run(
        [
            str(python),
            "create_data_nusc.py",
            "--root-path",
            str(root),
            "--version",
            "v1.0-mini",
        ],
        cwd=STREAMPETR / "tools",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for split in ("train", "val"):
        with open(root / f"nuscenes2d_temporal_infos_{split}.pkl", "rb") as f:
            theirs = pickle.load(f)
        assert len(theirs["infos"]) == len(ours[split]["infos"]) > 0
        _compare(ours[split], theirs, split)
