"""The synthetic data set is a valid nuScenes tree: the official devkit loads it and agrees with the infos."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from float_tolerance import float_atol

nuscenes = pytest.importorskip("nuscenes.nuscenes", reason="nuscenes-devkit is not installed")
splits = pytest.importorskip("nuscenes.utils.splits")
Quaternion = pytest.importorskip("pyquaternion").Quaternion

CAMERAS = ("CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT", "CAM_BACK_RIGHT")


@pytest.fixture(scope="module")
def nusc(synthetic_dataset: Path):
    return nuscenes.NuScenes(version="v1.0-mini", dataroot=str(synthetic_dataset), verbose=False)


@pytest.fixture(scope="module")
def infos(synthetic_dataset: Path) -> dict[str, dict]:
    out = {}
    for split in ("train", "val"):
        with open(synthetic_dataset / f"nuscenes2d_temporal_infos_{split}.pkl", "rb") as f:
            out.update({i["token"]: i for i in pickle.load(f)["infos"]})
    return out


def test_tables_and_files(nusc, synthetic_dataset: Path) -> None:
    assert len(nusc.scene) == 3 and len(nusc.sample) == 12
    assert {s["name"] for s in nusc.scene} <= set(splits.mini_train) | set(splits.mini_val)
    assert len(nusc.category) == 23 and len(nusc.visibility) == 4 and nusc.map
    for sample in nusc.sample:
        assert set(sample["data"]) == {"LIDAR_TOP", *CAMERAS}
        for channel, sd_token in sample["data"].items():
            path = Path(nusc.get_sample_data_path(sd_token))
            assert path.is_file(), path
            if channel == "LIDAR_TOP":
                pts = np.fromfile(path, dtype=np.float32)
                assert pts.size % 5 == 0 and pts.size > 0
    for rec in nusc.map:
        assert (synthetic_dataset / rec["filename"]).is_file()


def test_lidar_chain_restarts_per_scene(nusc) -> None:
    for scene in nusc.scene:
        first = nusc.get("sample", scene["first_sample_token"])
        sd = nusc.get("sample_data", first["data"]["LIDAR_TOP"])
        assert sd["prev"] == ""
        n = 1
        while sd["next"]:
            nxt = nusc.get("sample_data", sd["next"])
            assert nxt["timestamp"] > sd["timestamp"]
            assert nusc.get("sample", nxt["sample_token"])["scene_token"] == scene["token"]
            sd, n = nxt, n + 1
        assert n == scene["nbr_samples"]


def test_lidar_boxes_match_infos(nusc, infos) -> None:
    """gt_boxes / gt_velocity equal the devkit's boxes in the LIDAR_TOP frame and its box_velocity."""
    checked = 0
    for sample in nusc.sample:
        info = infos[sample["token"]]
        _, boxes, _ = nusc.get_sample_data(sample["data"]["LIDAR_TOP"])
        assert len(boxes) == len(info["gt_boxes"])
        l2e = nusc.get(
            "calibrated_sensor",
            nusc.get("sample_data", sample["data"]["LIDAR_TOP"])["calibrated_sensor_token"],
        )
        pose = nusc.get("ego_pose", nusc.get("sample_data", sample["data"]["LIDAR_TOP"])["ego_pose_token"])
        rot = np.linalg.inv(Quaternion(l2e["rotation"]).rotation_matrix) @ np.linalg.inv(
            Quaternion(pose["rotation"]).rotation_matrix
        )
        for box, gt, velo, token in zip(
            boxes, info["gt_boxes"], info["gt_velocity"], sample["anns"], strict=True
        ):
            # float64 on both sides (tests/float_tolerance.py): the generator's path and the devkit's
            # (global -> ego -> LiDAR: two quaternion rotations and translations), 40 roundings each,
            # on terms up to the poses' translations plus the box centre; the sizes are copies
            scale = sum(np.abs(t).sum() for t in (pose["translation"], l2e["translation"], box.center))
            np.testing.assert_allclose(gt[:3], box.center, rtol=0, atol=float_atol(np.float64, scale, 2 * 40))
            np.testing.assert_array_equal(gt[3:6], box.wlh[[1, 0, 2]])
            assert abs(gt[6] - box.orientation.yaw_pitch_roll[0]) <= float_atol(np.float64, np.pi, 2 * 40)
            v = (rot @ np.array([*nusc.box_velocity(token)[:2], 0.0]))[:2]
            # the devkit's velocity divides a difference of two such positions by dt >= 0.49 s
            atol = float_atol(np.float64, 2 * scale / 0.49, 2 * 40)
            np.testing.assert_allclose(velo, v, rtol=0, atol=atol, equal_nan=True)
            checked += 1
    assert checked > 50
