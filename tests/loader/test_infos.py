"""Info pickle -> frame records, and its validation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from conftest import CLASSES
from dali_streampetr.infos import InfoSchemaError, load_frames, quat_to_matrix


@pytest.fixture(scope="module")
def raw(tiny_root):
    with (tiny_root / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        return pickle.load(f)


def test_frames_sorted_converted_and_resolved(tiny_root, raw):
    frames = load_frames(tiny_root / "nuscenes2d_temporal_infos_train.pkl", tiny_root, CLASSES)
    assert [f.timestamp for f in frames] == sorted(f.timestamp for f in frames)
    info = next(i for i in raw["infos"] if i["token"] == frames[0].token)
    f = frames[0]
    assert (
        not f.has_sweeps
        and f.cam_names[0] == "CAM_FRONT"
        and all(p.startswith(str(tiny_root)) for p in f.img_paths)
    )
    valid = info["valid_flag"]
    np.testing.assert_allclose(f.gt_boxes[:, :2], info["gt_boxes"][valid][:, :2], atol=1e-5)
    np.testing.assert_allclose(
        f.gt_boxes[:, 2], info["gt_boxes"][valid][:, 2] - info["gt_boxes"][valid][:, 5] / 2, atol=1e-5
    )
    assert np.isfinite(f.gt_boxes).all() and f.gt_boxes.shape[1] == 9
    assert f.gt_labels.tolist() == [CLASSES.index(n) if n in CLASSES else -1 for n in info["gt_names"][valid]]
    np.testing.assert_allclose(f.ego_pose @ f.ego_pose_inv, np.eye(4), atol=1e-5)
    np.testing.assert_allclose(
        f.extrinsics[0][:3, :3], info["cams"]["CAM_FRONT"]["sensor2lidar_rotation"].T, atol=1e-6
    )


def test_quaternion_matches_axis_angle():
    angle = 0.7
    np.testing.assert_allclose(
        quat_to_matrix([np.cos(angle / 2), 0, 0, np.sin(angle / 2)]),
        [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]],
        atol=1e-12,
    )


def test_missing_keys_are_listed_in_one_error(tiny_root, raw, tmp_path):
    infos = [dict(i) for i in raw["infos"]]
    del infos[2]["valid_flag"], infos[3]["sweeps"]
    infos[4]["cams"] = {
        k: {kk: vv for kk, vv in v.items() if kk != "cam_intrinsic"} for k, v in infos[4]["cams"].items()
    }
    path = tmp_path / "bad.pkl"
    path.write_bytes(pickle.dumps({"infos": infos}))
    with pytest.raises(InfoSchemaError) as err:
        load_frames(path, tiny_root, CLASSES)
    msg = str(err.value)
    assert "sweeps (first at infos[3])" in msg and "valid_flag (first at infos[2])" in msg
    assert "cams.CAM_FRONT.cam_intrinsic (first at infos[4])" in msg


@pytest.mark.parametrize("payload", [[1, 2], {"infos": []}, {"data": []}, {"infos": ["x"]}])
def test_wrong_shape_rejected(tiny_root, tmp_path, payload):
    path = tmp_path / "wrong.pkl"
    path.write_bytes(pickle.dumps(payload))
    with pytest.raises(InfoSchemaError):
        load_frames(path, tiny_root, CLASSES)
