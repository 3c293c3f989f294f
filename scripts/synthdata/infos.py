"""StreamPETR's info pickles (`nuscenes2d_temporal_infos_{train,val}.pkl`) computed from nuScenes tables.

Same keys, key order, dtypes and shapes as StreamPETR's `tools/create_data_nusc.py` (including its
quirks: empty per-camera arrays have shape (0,), `gt_names`/`num_lidar_pts` of an empty frame are float64,
velocities are the devkit's finite differences and may be NaN). Written independently from the tables, so
the converter run on the same tables must reproduce it.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from . import geometry as g
from .catalog import ATTRIBUTES, CAMERAS, LIDAR, MINI_SCENES, NAME_MAPPING, NUS_CATEGORIES
from .tables import VERSION

INFO_PREFIX = "nuscenes2d"
MAX_SWEEPS = 10
NUS_ATTRIBUTES = (*ATTRIBUTES, "None")


class _DB:
    """Token lookups over the tables plus the devkit's reverse indices (sample.data / sample.anns)."""

    def __init__(self, tables: dict[str, list[dict]]) -> None:
        self.tables = tables
        self._index = {name: {r["token"]: r for r in recs} for name, recs in tables.items()}
        self.data: dict[str, dict[str, str]] = {s["token"]: {} for s in tables["sample"]}
        self.anns: dict[str, list[str]] = {s["token"]: [] for s in tables["sample"]}
        for sd in tables["sample_data"]:
            if sd["is_key_frame"]:
                self.data[sd["sample_token"]][self.channel(sd)] = sd["token"]
        for a in tables["sample_annotation"]:
            self.anns[a["sample_token"]].append(a["token"])

    def get(self, table: str, token: str) -> dict:
        return self._index[table][token]

    def channel(self, sd: dict) -> str:
        cs = self.get("calibrated_sensor", sd["calibrated_sensor_token"])
        return self.get("sensor", cs["sensor_token"])["channel"]

    def category(self, ann: dict) -> str:
        inst = self.get("instance", ann["instance_token"])
        return self.get("category", inst["category_token"])["name"]

    def sensor2global(self, sd: dict) -> np.ndarray:
        cs = self.get("calibrated_sensor", sd["calibrated_sensor_token"])
        pose = self.get("ego_pose", sd["ego_pose_token"])
        return g.pose_matrix(pose["rotation"], pose["translation"]) @ g.pose_matrix(
            cs["rotation"], cs["translation"]
        )

    def velocity(self, ann: dict, max_time_diff: float = 1.5) -> np.ndarray:
        """The devkit's `box_velocity`: centred finite difference in the global frame, NaN if unknown."""
        has_prev, has_next = ann["prev"] != "", ann["next"] != ""
        if not has_prev and not has_next:
            return np.array([np.nan, np.nan, np.nan])
        first = self.get("sample_annotation", ann["prev"]) if has_prev else ann
        last = self.get("sample_annotation", ann["next"]) if has_next else ann
        dt = (
            1e-6 * self.get("sample", last["sample_token"])["timestamp"]
            - 1e-6 * self.get("sample", first["sample_token"])["timestamp"]
        )
        if has_prev and has_next:
            max_time_diff *= 2
        if dt > max_time_diff:
            return np.array([np.nan, np.nan, np.nan])
        return (np.array(last["translation"]) - np.array(first["translation"])) / dt


def _sensor_info(db: _DB, root: Path, sd_token: str, lidar2global: np.ndarray, kind: str) -> dict:
    sd = db.get("sample_data", sd_token)
    cs = db.get("calibrated_sensor", sd["calibrated_sensor_token"])
    pose = db.get("ego_pose", sd["ego_pose_token"])
    s2l = g.rigid_inverse(lidar2global) @ db.sensor2global(sd)
    return {
        "data_path": str(root / sd["filename"]),
        "type": kind,
        "sample_data_token": sd["token"],
        "sensor2ego_translation": cs["translation"],
        "sensor2ego_rotation": cs["rotation"],
        "ego2global_translation": pose["translation"],
        "ego2global_rotation": pose["rotation"],
        "timestamp": sd["timestamp"],
        "sensor2lidar_rotation": s2l[:3, :3],
        "sensor2lidar_translation": s2l[:3, 3],
    }


def _box_in(frame2global: np.ndarray, ann: dict) -> tuple[np.ndarray, np.ndarray]:
    """Centre and rotation matrix of an annotation's box in a sensor frame."""
    inv = g.rigid_inverse(frame2global)
    centre = g.apply(inv, np.array([ann["translation"]]))[0]
    return centre, inv[:3, :3] @ g.quat_to_matrix(ann["rotation"])


def _camera_annotations(db: _DB, sample: dict, cam_sd_token: str) -> dict[str, list]:
    """Per-camera 2D/mono-3D records exactly as the converter's `get_2d_boxes` + filters produce them."""
    sd = db.get("sample_data", cam_sd_token)
    cs = db.get("calibrated_sensor", sd["calibrated_sensor_token"])
    k = np.array(cs["camera_intrinsic"])
    cam2global = db.sensor2global(sd)
    width, height = sd["width"], sd["height"]
    out: dict[str, list] = {
        key: [] for key in ("bboxes2d", "labels2d", "centers2d", "depths", "vis", "box3d")
    }
    for ann_token in db.anns[sample["token"]]:
        ann = db.get("sample_annotation", ann_token)
        centre, rot = _box_in(cam2global, ann)
        corners = g.box_corners(centre, np.array(ann["size"]), rot)
        bbox, degenerate = g.canvas_box(corners, k)
        if degenerate:
            raise ValueError(f"annotation {ann_token}: degenerate 2D hull in {db.channel(sd)}")
        name = NAME_MAPPING.get(db.category(ann))
        if bbox is None or name is None:
            continue
        depth = centre[2]
        if depth <= 0:
            continue
        for attr in ann["attribute_tokens"][:1]:
            assert db.get("attribute", attr)["name"] in NUS_ATTRIBUTES
        x1, y1, x2, y2 = bbox
        w, h = x2 - x1, y2 - y1
        inter_w = max(0, min(x1 + w, width) - max(x1, 0))
        inter_h = max(0, min(y1 + h, height) - max(y1, 0))
        if inter_w * inter_h == 0 or w * h <= 0 or w < 1 or h < 1:
            continue
        uv = (k @ centre)[:2] / depth
        wlh = np.array(ann["size"])
        out["bboxes2d"].append([x1, y1, x1 + w, y1 + h])
        out["labels2d"].append(NUS_CATEGORIES.index(name))
        out["centers2d"].append(uv.tolist())
        out["depths"].append(depth)
        out["vis"].append(ann["visibility_token"])
        out["box3d"].append([*centre.tolist(), wlh[1], wlh[2], wlh[0], -g.quat_yaw(g.matrix_to_quat(rot))])
    return out


def sample_info(db: _DB, root: Path, sample: dict, frame_idx: int) -> dict:
    """One info dict, keys in the converter's order."""
    lidar_sd = db.get("sample_data", db.data[sample["token"]][LIDAR])
    cs = db.get("calibrated_sensor", lidar_sd["calibrated_sensor_token"])
    pose = db.get("ego_pose", lidar_sd["ego_pose_token"])
    lidar2global = db.sensor2global(lidar_sd)
    info = {
        "lidar_path": str(root / lidar_sd["filename"]),
        "token": sample["token"],
        "prev": sample["prev"],
        "next": sample["next"],
        "sweeps": [],
        "frame_idx": frame_idx,
        "cams": {},
        "scene_token": sample["scene_token"],
        "lidar2ego_translation": cs["translation"],
        "lidar2ego_rotation": cs["rotation"],
        "ego2global_translation": pose["translation"],
        "ego2global_rotation": pose["rotation"],
        "timestamp": sample["timestamp"],
    }
    for cam in CAMERAS:
        sd = db.get("sample_data", db.data[sample["token"]][cam])
        cam_info = _sensor_info(db, root, sd["token"], lidar2global, cam)
        cam_info["cam_intrinsic"] = np.array(
            db.get("calibrated_sensor", sd["calibrated_sensor_token"])["camera_intrinsic"]
        )
        info["cams"][cam] = cam_info
    sd = lidar_sd
    while len(info["sweeps"]) < MAX_SWEEPS and sd["prev"] != "":
        info["sweeps"].append(_sensor_info(db, root, sd["prev"], lidar2global, "lidar"))
        sd = db.get("sample_data", sd["prev"])

    anns = [db.get("sample_annotation", t) for t in db.anns[sample["token"]]]
    boxes = [_box_in(lidar2global, a) for a in anns]
    locs = np.array([c for c, _ in boxes]).reshape(-1, 3)
    dims = np.array([a["size"] for a in anns]).reshape(-1, 3)
    rots = np.array([g.quat_yaw(g.matrix_to_quat(r)) for _, r in boxes]).reshape(-1, 1)
    to_lidar = np.linalg.inv(lidar2global[:3, :3])
    velocity = np.array([(np.array([*db.velocity(a)[:2], 0.0]) @ to_lidar.T)[:2] for a in anns])
    names = [NAME_MAPPING.get(db.category(a), db.category(a)) for a in anns]
    info["gt_boxes"] = np.concatenate([locs, dims[:, [1, 0, 2]], rots], axis=1)
    info["gt_names"] = np.array(names)
    info["gt_velocity"] = velocity.reshape(-1, 2)
    info["num_lidar_pts"] = np.array([a["num_lidar_pts"] for a in anns])
    info["num_radar_pts"] = np.array([a["num_radar_pts"] for a in anns])
    info["valid_flag"] = np.array(
        [a["num_lidar_pts"] + a["num_radar_pts"] > 0 for a in anns], dtype=bool
    ).reshape(-1)

    per_cam = [_camera_annotations(db, sample, info["cams"][cam]["sample_data_token"]) for cam in CAMERAS]
    info["bboxes2d"] = [np.array(c["bboxes2d"], dtype=np.float32) for c in per_cam]
    info["bboxes3d_cams"] = [np.array(c["box3d"], dtype=np.float32) for c in per_cam]
    info["labels2d"] = [np.array(c["labels2d"], dtype=np.int64) for c in per_cam]
    info["centers2d"] = [np.array(c["centers2d"], dtype=np.float32) for c in per_cam]
    info["depths"] = [np.array(c["depths"], dtype=np.float32) for c in per_cam]
    info["bboxes_ignore"] = [np.array([], dtype=np.float32) for _ in per_cam]
    info["visibilities"] = [c["vis"] for c in per_cam]
    return info


def build_infos(tables: dict[str, list[dict]], root: Path) -> tuple[list[dict], list[dict]]:
    """(train, val) info lists; a sample goes to train iff its scene name is in the official mini_train."""
    db = _DB(tables)
    train_names = {name for name, split in MINI_SCENES if split == "train"}
    train_scenes = {s["token"] for s in tables["scene"] if s["name"] in train_names}
    train, val = [], []
    frame_idx = 0
    for sample in tables["sample"]:
        info = sample_info(db, root, sample, frame_idx)
        frame_idx = 0 if sample["next"] == "" else frame_idx + 1
        (train if sample["scene_token"] in train_scenes else val).append(info)
    return train, val


def info_path(root: Path, split: str) -> Path:
    return root / f"{INFO_PREFIX}_temporal_infos_{split}.pkl"


def write_infos(root: Path, tables: dict[str, list[dict]]) -> None:
    """Write both pickles (protocol 2, like `mmcv.dump`); paths inside are absolute (see the package doc)."""
    train, val = build_infos(tables, root.resolve())
    for split, infos in (("train", train), ("val", val)):
        with open(info_path(root, split), "wb") as f:
            pickle.dump({"infos": infos, "metadata": {"version": VERSION}}, f, protocol=2)
