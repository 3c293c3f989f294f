"""Stack tier: StreamPETR's own converter (tools/create_data_nusc.py with the real mmcv/mmdet3d), run
through `nox -s create_data`'s runner on our nuScenes tables, reproduces our info pickles: same keys
and order, dtypes, shapes, values within their rounding (float64 paths, float32 storage);
`--out` leaves the data root's pickles alone.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from float_tolerance import float_atol, projection_atol

REPO_ROOT = Path(__file__).resolve().parents[2]


def float64_atol(infos: list[dict]) -> float:
    """How far two float64 paths from the same tables may differ (tests/float_tolerance.py): 80
    roundings each, on terms up to the global coordinates times the intrinsics over the nearest
    depth (the projections to centers2d divide by it)."""
    coords = max(np.abs(info["ego2global_translation"]).max() + 100 for info in infos)  # + the boxes' reach
    depth = min(d.min() for info in infos for d in info["depths"] if d.size)
    focal = max(np.abs(cam["cam_intrinsic"]).max() for info in infos for cam in info["cams"].values())
    return float_atol(np.float64, coords * max(1.0, focal / depth), 2 * 80)


def _compare_centres(ours: dict, theirs: dict, where: str, atol: float) -> None:
    """StreamPETR's converter projects the camera-frame centres in float32 torch (mmdet3d's
    points_cam2img: both inputs cast, a 4-term product, the division: 7 roundings); ours rounds a
    float64 projection once."""
    assert len(ours["centers2d"]) == len(theirs["centers2d"]) == len(ours["cams"]), where
    for i, cam in enumerate(ours["cams"].values()):
        mine, upstream = ours["centers2d"][i], theirs["centers2d"][i]
        assert mine.dtype == upstream.dtype and mine.shape == upstream.shape, (where, i)
        if not mine.size:
            continue
        k = np.eye(4)
        k[:3, :3] = cam["cam_intrinsic"]
        tol = projection_atol(np.float32, k, theirs["bboxes3d_cams"][i][:, :3], 7)
        tol = tol + float_atol(np.float32, np.abs(mine).max(1), 1) + atol
        assert (np.abs(mine - upstream).max(1) <= tol).all(), (where, i, np.abs(mine - upstream).max(1), tol)


def _compare(ours: object, theirs: object, where: str, atol: float) -> None:
    if isinstance(ours, dict):
        assert isinstance(theirs, dict) and list(ours) == list(theirs), (where, list(ours), list(theirs))
        for key in ours:
            if key == "centers2d":
                _compare_centres(ours, theirs, f"{where}.{key}", atol)
            else:
                _compare(ours[key], theirs[key], f"{where}.{key}", atol)
    elif isinstance(ours, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _compare(a, b, f"{where}[{i}]", atol)
    elif isinstance(ours, np.ndarray):
        assert isinstance(theirs, np.ndarray), where
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (where, ours.dtype, theirs.dtype)
        if ours.dtype.kind in "fc":
            # float32 fields: each side rounds its float64 value once more (relative u each)
            rtol = float_atol(ours.dtype, 1, 2) if ours.dtype != np.float64 else 0.0
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(ours, float):
        assert isinstance(theirs, float) and abs(ours - theirs) <= atol, (where, ours, theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


@pytest.mark.upstream
@pytest.mark.stack
def test_streampetr_converter_reproduces_our_infos(tmp_path: Path) -> None:
    from synthdata import ensure_dataset

    root = ensure_dataset(tmp_path / "nuscenes", scenes=3, samples_per_scene=3, seed=11)
    shipped = {split: (root / f"nuscenes2d_temporal_infos_{split}.pkl") for split in ("train", "val")}
    before = {split: (path.read_bytes(), path.stat().st_mtime_ns) for split, path in shipped.items()}
    ours = {split: pickle.loads(data) for split, (data, _) in before.items()}
    out = tmp_path / "infos"
    cmd = [sys.executable, "-m", "upstream_run", "create_data", "--root", str(root), "--version", "v1.0-mini"]
    cmd += ["--out", str(out), "--python", sys.executable]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for split in ("train", "val"):
        with open(out / f"nuscenes2d_temporal_infos_{split}.pkl", "rb") as f:
            theirs = pickle.load(f)
        assert len(theirs["infos"]) == len(ours[split]["infos"]) > 0
        _compare(ours[split], theirs, split, float64_atol(ours[split]["infos"]))
        path = shipped[split]
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before[split], f"--out wrote into {path}"
