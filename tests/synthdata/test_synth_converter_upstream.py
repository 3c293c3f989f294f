"""Stack tier: StreamPETR's own converter (tools/create_data_nusc.py with the real mmcv/mmdet3d), run
through `nox -s create_data`'s runner on our nuScenes tables, reproduces our info pickles: same keys
and order, dtypes, shapes, values within 1e-4; `--out` leaves the data root's pickles alone.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


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
        _compare(ours[split], theirs, split)
        path = shipped[split]
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before[split], f"--out wrote into {path}"
