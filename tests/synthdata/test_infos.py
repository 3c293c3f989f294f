"""StreamPETR info pickles: schema, splits, sequences, and 2D labels that are real projections."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from float_tolerance import float_atol, projection_atol

CAMERAS = ("CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT", "CAM_BACK_RIGHT")
MINI_TRAIN = {
    "scene-0061",
    "scene-0553",
    "scene-0655",
    "scene-0757",
    "scene-0796",
    "scene-1077",
    "scene-1094",
}
MINI_TRAIN |= {"scene-1100"}
MINI_VAL = {"scene-0103", "scene-0916"}
TEN_CLASSES = {
    "car", "truck", "construction_vehicle", "bus", "trailer", "barrier", "motorcycle", "bicycle",
    "pedestrian", "traffic_cone",
}  # fmt: skip
# Key order of StreamPETR's tools/data_converter/nuscenes_converter.py (_fill_trainval_infos).
INFO_KEYS = [
    "lidar_path", "token", "prev", "next", "sweeps", "frame_idx", "cams", "scene_token",
    "lidar2ego_translation", "lidar2ego_rotation", "ego2global_translation", "ego2global_rotation",
    "timestamp",
    "gt_boxes", "gt_names", "gt_velocity", "num_lidar_pts", "num_radar_pts", "valid_flag",
    "bboxes2d", "bboxes3d_cams", "labels2d", "centers2d", "depths", "bboxes_ignore", "visibilities",
]  # fmt: skip
SENSOR_KEYS = [
    "data_path", "type", "sample_data_token", "sensor2ego_translation", "sensor2ego_rotation",
    "ego2global_translation", "ego2global_rotation", "timestamp", "sensor2lidar_rotation",
    "sensor2lidar_translation",
]  # fmt: skip


def _load(root: Path, split: str) -> dict:
    with open(root / f"nuscenes2d_temporal_infos_{split}.pkl", "rb") as f:
        return pickle.load(f)


@pytest.fixture(scope="module")
def data(synthetic_dataset: Path) -> dict[str, list[dict]]:
    out = {}
    for split in ("train", "val"):
        d = _load(synthetic_dataset, split)
        assert set(d) == {"infos", "metadata"} and d["metadata"] == {"version": "v1.0-mini"}
        out[split] = d["infos"]
    return out


@pytest.fixture(scope="module")
def scene_names(synthetic_dataset: Path) -> dict[str, str]:
    import json

    scenes = json.loads((synthetic_dataset / "v1.0-mini" / "scene.json").read_text())
    return {s["token"]: s["name"] for s in scenes}


def _all(data) -> list[dict]:
    return sorted(data["train"] + data["val"], key=lambda i: i["timestamp"])


def test_schema(data) -> None:
    for info in _all(data):
        assert list(info) == INFO_KEYS
        assert list(info["cams"]) == list(CAMERAS)
        for cam in CAMERAS:
            c = info["cams"][cam]
            assert list(c) == [*SENSOR_KEYS, "cam_intrinsic"] and c["type"] == cam
            assert c["cam_intrinsic"].shape == (3, 3) and c["cam_intrinsic"].dtype == np.float64
            assert c["sensor2lidar_rotation"].shape == (3, 3) and c["sensor2lidar_translation"].shape == (3,)
            assert Path(c["data_path"]).is_absolute() and Path(c["data_path"]).is_file()
            assert isinstance(c["timestamp"], int) and isinstance(c["sensor2ego_rotation"], list)
        for sweep in info["sweeps"]:
            assert list(sweep) == SENSOR_KEYS and sweep["type"] == "lidar"
        n = len(info["gt_boxes"])
        assert info["gt_boxes"].shape == (n, 7) and info["gt_boxes"].dtype == np.float64
        assert info["gt_velocity"].shape == (n, 2) and info["valid_flag"].dtype == bool
        assert info["gt_names"].shape == info["num_lidar_pts"].shape == info["valid_flag"].shape == (n,)
        if n:
            assert info["gt_names"].dtype.kind == "U" and info["num_lidar_pts"].dtype == np.int64
        else:  # the converter's np.array([]) quirk
            assert info["gt_names"].dtype == np.float64
        for key in (
            "bboxes2d",
            "bboxes3d_cams",
            "labels2d",
            "centers2d",
            "depths",
            "bboxes_ignore",
            "visibilities",
        ):
            assert len(info[key]) == 6
        for i in range(6):
            k = len(info["labels2d"][i])
            assert info["labels2d"][i].dtype == np.int64
            assert info["bboxes_ignore"][i].shape == (0,) and info["bboxes_ignore"][i].dtype == np.float32
            shapes = {"bboxes2d": (k, 4), "bboxes3d_cams": (k, 7), "centers2d": (k, 2), "depths": (k,)}
            for key, shape in shapes.items():
                arr = info[key][i]
                assert arr.dtype == np.float32
                assert arr.shape == (shape if k else (0,)), (key, arr.shape)
            assert len(info["visibilities"][i]) == k and set(info["visibilities"][i]) <= {"1", "2", "3", "4"}


def test_split_membership(data, scene_names) -> None:
    train = {scene_names[i["scene_token"]] for i in data["train"]}
    val = {scene_names[i["scene_token"]] for i in data["val"]}
    assert train and val and train <= MINI_TRAIN and val <= MINI_VAL


def test_sequences(data) -> None:
    """`sweeps` empty exactly at scene starts; frame_idx counts; time ranges increasing and disjoint."""
    infos = _all(data)
    by_scene: dict[str, list[dict]] = {}
    for info in infos:
        by_scene.setdefault(info["scene_token"], []).append(info)
    ranges = []
    for frames in by_scene.values():
        assert [f["frame_idx"] for f in frames] == list(range(len(frames)))
        assert [len(f["sweeps"]) == 0 for f in frames] == [True] + [False] * (len(frames) - 1)
        assert [len(f["sweeps"]) for f in frames[1:]] == [min(k, 10) for k in range(1, len(frames))]
        assert frames[0]["prev"] == "" and frames[-1]["next"] == ""
        for a, b in zip(frames, frames[1:], strict=False):
            assert a["next"] == b["token"] and b["prev"] == a["token"]
            assert b["sweeps"][0]["timestamp"] == a["timestamp"]
        ts = [f["timestamp"] for f in frames]
        assert ts == sorted(ts) and len(set(ts)) == len(ts)
        for f in frames:
            cam_ts = [c["timestamp"] for c in f["cams"].values()]
            assert all(0 <= t - f["timestamp"] < 100_000 for t in cam_ts)
        ranges.append((ts[0], ts[-1]))
    ranges.sort()
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def test_content_coverage(data) -> None:
    """Unknown classes, out-of-range boxes, invalid boxes, NaN velocities and empty frames are present."""
    infos = _all(data)
    names = np.concatenate([i["gt_names"] for i in infos if len(i["gt_names"])])
    boxes = np.concatenate([i["gt_boxes"] for i in infos])
    velo = np.concatenate([i["gt_velocity"] for i in infos])
    valid = np.concatenate([i["valid_flag"] for i in infos])
    assert set(names) & TEN_CLASSES and set(names) - TEN_CLASSES
    assert np.any(np.abs(boxes[:, :2]).max(1) > 51.2) and np.any(np.abs(boxes[:, :2]).max(1) < 51.2)
    assert valid.any() and not valid.all()
    assert np.isnan(velo).any() and (np.linalg.norm(np.nan_to_num(velo), axis=1) > 1.0).any()
    assert any(len(i["gt_boxes"]) == 0 for i in infos)
    vis = {v for i in infos for cam in i["visibilities"] for v in cam}
    assert {"1", "4"} <= vis


def _lidar2img(cam: dict) -> np.ndarray:
    """As StreamPETR's dataset computes it: viewpad(K) @ inv([R | t] sensor->lidar). An independent
    oracle: written from upstream's formula, not taken from synthdata's own geometry."""
    s2l = np.eye(4)
    s2l[:3, :3] = cam["sensor2lidar_rotation"]
    s2l[:3, 3] = cam["sensor2lidar_translation"]
    viewpad = np.eye(4)
    viewpad[:3, :3] = cam["cam_intrinsic"]
    return viewpad @ np.linalg.inv(s2l)


def test_centers_and_depths_are_projected_boxes(data) -> None:
    """Every (centers2d, depth) is a gt_boxes centre projected with lidar2img, and lies in its 2D box."""
    matched = 0
    for info in _all(data):
        centres = np.concatenate([info["gt_boxes"][:, :3], np.ones((len(info["gt_boxes"]), 1))], 1)
        for i, cam in enumerate(CAMERAS):
            l2i = _lidar2img(info["cams"][cam])
            proj = centres @ l2i.T
            uvd = np.concatenate([proj[:, :2] / proj[:, 2:3], proj[:, 2:3]], 1)
            # the pickle rounds each float64 value to float32 once; the generator's float64 path and
            # this one (tests/float_tolerance.py): 30 roundings each, on the projection's terms
            tol = float_atol(np.float32, np.abs(uvd).max(1), 1)
            tol = tol + projection_atol(np.float64, l2i, centres[:, :3], 2 * 30)
            for c2d, depth, box in zip(
                info["centers2d"][i], info["depths"][i], info["bboxes2d"][i], strict=True
            ):
                err = np.abs(uvd - np.array([*c2d, depth])).max(1)
                assert (err <= tol).any(), (cam, c2d, depth, err.min())
                assert depth > 0 and 0 <= box[0] < box[2] <= 1600 and 0 <= box[1] < box[3] <= 900, box
                if 0 <= c2d[0] <= 1600 and 0 <= c2d[1] <= 900:
                    slack = float_atol(np.float32, 1600, 2)  # the centre and the box, each rounded once
                    assert box[0] - slack <= c2d[0] <= box[2] + slack
                    assert box[1] - slack <= c2d[1] <= box[3] + slack
                matched += 1
    assert matched > 50


def test_2d_boxes_match_devkit_reprojection(synthetic_dataset: Path, data) -> None:
    """bboxes2d/centers2d/depths/labels2d equal an independent reprojection with the devkit and shapely."""
    nuscenes = pytest.importorskip("nuscenes.nuscenes")
    geometry = pytest.importorskip("shapely.geometry")
    from nuscenes.utils.geometry_utils import view_points
    from pyquaternion import Quaternion

    mapping = {"vehicle.car": 0, "vehicle.truck": 1, "vehicle.trailer": 2, "vehicle.bus.rigid": 3}
    mapping |= {"vehicle.construction": 4, "vehicle.bicycle": 5, "vehicle.motorcycle": 6}
    mapping |= {"human.pedestrian.adult": 7, "human.pedestrian.child": 7, "movable_object.trafficcone": 8}
    mapping |= {"movable_object.barrier": 9}
    nusc = nuscenes.NuScenes(version="v1.0-mini", dataroot=str(synthetic_dataset), verbose=False)
    canvas = geometry.box(0, 0, 1600, 900)
    compared = 0
    for info in _all(data):
        sample = nusc.get("sample", info["token"])
        for i, cam in enumerate(CAMERAS):
            sd = nusc.get("sample_data", sample["data"][cam])
            cs = nusc.get("calibrated_sensor", sd["calibrated_sensor_token"])
            pose = nusc.get("ego_pose", sd["ego_pose_token"])
            k = np.array(cs["camera_intrinsic"])
            expect = []
            for token in sample["anns"]:
                ann = nusc.get("sample_annotation", token)
                box = nusc.get_box(token)
                box.translate(-np.array(pose["translation"]))
                box.rotate(Quaternion(pose["rotation"]).inverse)
                box.translate(-np.array(cs["translation"]))
                box.rotate(Quaternion(cs["rotation"]).inverse)
                corners = box.corners()
                corners = corners[:, corners[2] > 0]
                if ann["category_name"] not in mapping or box.center[2] <= 0 or corners.shape[1] == 0:
                    continue
                hull = geometry.MultiPoint(view_points(corners, k, True).T[:, :2].tolist()).convex_hull
                if not hull.intersects(canvas):
                    continue
                xy = np.array(hull.intersection(canvas).exterior.coords)
                x1, y1, x2, y2 = xy[:, 0].min(), xy[:, 1].min(), xy[:, 0].max(), xy[:, 1].max()
                if x2 - x1 < 1 or y2 - y1 < 1:
                    continue
                uv = view_points(box.center[:, None], k, True)[:2, 0]
                expect.append([x1, y1, x2, y2, *uv, box.center[2], mapping[ann["category_name"]]])
            cols = [info["bboxes2d"][i], info["centers2d"][i], info["depths"][i][:, None]]
            cols.append(info["labels2d"][i][:, None])
            got = np.concatenate(cols, 1) if len(info["labels2d"][i]) else np.zeros((0, 8))
            # the pickle rounds each float64 value to float32 once (relative u); the two float64
            # paths (the generator's clipping, shapely's intersection): 50 roundings each on <= 1600 px
            rtol, atol = float_atol(np.float32, 1, 1), float_atol(np.float64, 1600, 2 * 50)
            np.testing.assert_allclose(got, np.array(expect).reshape(-1, 8), rtol=rtol, atol=atol)
            compared += len(expect)
    assert compared > 50
