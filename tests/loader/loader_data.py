"""Small hand-made StreamPETR-format data for the loader tests (6 cameras, small JPEGs): the helpers
the tests import; the fixtures that build it live in conftest.py."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

CLASSES = ["car", "truck", "construction_vehicle", "bus", "trailer", "barrier",
           "motorcycle", "bicycle", "pedestrian", "traffic_cone"]  # fmt: skip
CAMS = {
    "CAM_FRONT": 0.0,
    "CAM_FRONT_RIGHT": -0.96,
    "CAM_FRONT_LEFT": 0.96,
    "CAM_BACK": np.pi,
    "CAM_BACK_LEFT": 1.92,
    "CAM_BACK_RIGHT": -1.92,
}
H, W = 225, 400

# Poses, box corners and projections below are an independent oracle: written here, not taken from
# dali_streampetr.batch.transforms, so the data the loader tests expect does not share the code under test.


def _yaw_quat(yaw: float) -> list[float]:
    return [float(np.cos(yaw / 2)), 0.0, 0.0, float(np.sin(yaw / 2))]


def _cam_to_lidar(yaw: float) -> np.ndarray:
    """Columns: camera x (right), y (down), z (forward) in LiDAR axes."""
    fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    right = np.array([np.sin(yaw), -np.cos(yaw), 0.0])
    return np.stack([right, [0.0, 0.0, -1.0], fwd], axis=1)


def _corners(box: np.ndarray) -> np.ndarray:
    """8 corners of a centre-origin (x, y, z, l, w, h, yaw) box."""
    x, y, z, length, w, h, yaw = box
    sx, sy, sz = np.meshgrid([-0.5, 0.5], [-0.5, 0.5], [-0.5, 0.5], indexing="ij")
    local = np.stack([sx.ravel() * length, sy.ravel() * w, sz.ravel() * h], 1)
    c, s = np.cos(yaw), np.sin(yaw)
    return local @ np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]]) + [x, y, z]


def make_dataset(root: Path, scenes: int = 3, frames: int = 4, seed: int = 0) -> Path:
    """Write ``nuscenes2d_temporal_infos_train.pkl`` + JPEGs under ``root``; return ``root``."""
    rng = np.random.default_rng(seed)
    k = np.array([[320.0, 0, W / 2], [0, 320.0, H / 2], [0, 0, 1]])
    infos, t = [], 1_600_000_000_000_000
    for scene in range(scenes):
        n = 8
        boxes = np.concatenate(
            [
                rng.uniform([-30, -30, -1.0], [30, 30, 0.5], (n, 3)),
                rng.uniform([1.5, 1.0, 1.2], [5.0, 2.5, 2.5], (n, 3)),
                rng.uniform(-np.pi, np.pi, (n, 1)),
            ],
            1,
        )
        boxes[0, :2] = (60.0, 1.0)  # outside the BEV range
        names = np.array([CLASSES[i % 10] for i in range(n)])
        names[1] = "animal"  # not a training class
        velocity = rng.uniform(-3, 3, (n, 2))
        velocity[2] = np.nan
        valid = np.ones(n, dtype=bool)
        valid[3] = False
        for f in range(frames):
            t += 500_000
            token = f"s{scene}f{f}"
            moved = boxes.copy()
            moved[:, :2] += np.nan_to_num(velocity) * 0.5 * f
            info = {
                "token": token,
                "lidar_path": f"./data/nuscenes/samples/LIDAR_TOP/{token}.bin",
                "sweeps": [] if f == 0 else [{"data_path": "x"}],
                "prev": "",
                "next": "",
                "scene_token": f"scene{scene}",
                "frame_idx": f,
                "timestamp": t,
                "ego2global_rotation": _yaw_quat(0.1 * scene + 0.05 * f),
                "ego2global_translation": [100.0 + 5 * f, 50.0 + scene, 0.0],
                "lidar2ego_rotation": _yaw_quat(-np.pi / 2),
                "lidar2ego_translation": [0.9, 0.0, 1.8],
                "cams": {},
                "gt_boxes": moved.astype(np.float64),
                "gt_names": names,
                "gt_velocity": velocity,
                "valid_flag": valid,
                "num_lidar_pts": np.full(n, 10),
            }
            for key in ("bboxes2d", "labels2d", "centers2d", "depths", "bboxes_ignore"):
                info[key] = []
            for cam, yaw in CAMS.items():
                rot = _cam_to_lidar(yaw)
                trans = np.array([1.0 * np.cos(yaw), 1.0 * np.sin(yaw), 1.5])
                rel = f"samples/{cam}/{token}.jpg"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                img = Image.fromarray(rng.integers(60, 110, (H, W, 3), dtype=np.uint8))
                draw = ImageDraw.Draw(img)
                b2d, centres, depths, labels = [], [], [], []
                for i, box in enumerate(moved):
                    if i in (0, 1, 3):  # filtered out of the 3D ground truth: no 2D record either
                        continue
                    pts = (_corners(box) - trans) @ rot  # LiDAR -> camera
                    centre = (box[:3] - trans) @ rot
                    if centre[2] < 1.0 or (pts[:, 2] < 0.1).any():
                        continue
                    uv = pts[:, :2] / pts[:, 2:] * [k[0, 0], k[1, 1]] + k[:2, 2]
                    x1, y1 = np.clip(uv.min(0), 0, [W, H])
                    x2, y2 = np.clip(uv.max(0), 0, [W, H])
                    if x2 - x1 < 1 or y2 - y1 < 1:
                        continue
                    cu = centre[:2] / centre[2] * [k[0, 0], k[1, 1]] + k[:2, 2]
                    b2d.append([x1, y1, x2, y2])
                    centres.append(cu)
                    depths.append(centre[2])
                    labels.append(i % 10)
                    colour = tuple(int(v) for v in rng.integers(120, 255, 3))
                    draw.rectangle([x1, y1, x2, y2], outline=colour, width=2)
                img.save(root / rel, quality=90)
                info["cams"][cam] = {
                    "data_path": f"./data/nuscenes/{rel}",
                    "type": cam,
                    "timestamp": t + 1000,
                    "sensor2lidar_rotation": rot,
                    "sensor2lidar_translation": trans,
                    "cam_intrinsic": k,
                }
                info["bboxes2d"].append(np.array(b2d, dtype=np.float32).reshape(-1, 4))
                info["centers2d"].append(np.array(centres, dtype=np.float32).reshape(-1, 2))
                info["depths"].append(np.array(depths, dtype=np.float32))
                info["labels2d"].append(np.array(labels, dtype=np.int64))
                info["bboxes_ignore"].append(np.zeros((0, 4), dtype=np.float32))
            infos.append(info)
    rng.shuffle(infos)  # the dataset sorts by timestamp
    with (root / "nuscenes2d_temporal_infos_train.pkl").open("wb") as f:
        pickle.dump({"infos": infos, "metadata": {"version": "v1.0-mini"}}, f)
    return root


def tiny_config(**dlc) -> dict:
    """A StreamPETR-style config dict for the small images."""
    return {
        "class_names": CLASSES,
        "point_cloud_range": [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0],
        "img_norm_cfg": {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375], "to_rgb": True},
        "ida_aug_conf": {
            "resize_lim": (0.38, 0.55),
            "final_dim": (64, 176),
            "bot_pct_lim": (0.0, 0.0),
            "rot_lim": (0.0, 0.0),
            "H": H,
            "W": W,
            "rand_flip": True,
        },
        "data": {
            "samples_per_gpu": 2,
            "train": {"seq_split_num": 2, "ann_file": "./data/nuscenes/nuscenes2d_temporal_infos_train.pkl"},
        },
        "data_loading_config": {"num_threads": 1, "py_num_workers": 0, **dlc},
    }


EVAL_META_KEYS = ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "flip", "box_mode_3d",
                  "box_type_3d", "img_norm_cfg", "scene_token")  # fmt: skip
GEOMETRY = ["lidar2img", "intrinsics", "extrinsics", "timestamp", "img_timestamp", "ego_pose", "ego_pose_inv"]


def eval_pipeline(cfg: dict) -> list[dict]:
    """Upstream's test pipeline (every test config of the pin), for ``cfg``'s image settings."""
    return [
        {"type": "LoadMultiViewImageFromFiles", "to_float32": True},
        {"type": "ResizeCropFlipRotImage", "data_aug_conf": cfg["ida_aug_conf"], "training": False},
        {"type": "NormalizeMultiviewImage", **cfg["img_norm_cfg"]},
        {"type": "PadMultiViewImage", "size_divisor": 32},
        {
            "type": "MultiScaleFlipAug3D",
            "img_scale": (1333, 800),
            "pts_scale_ratio": 1,
            "flip": False,
            "transforms": [
                {
                    "type": "PETRFormatBundle3D",
                    "collect_keys": GEOMETRY,
                    "class_names": CLASSES,
                    "with_label": False,
                },  # fmt: skip
                {"type": "Collect3D", "keys": ["img", *GEOMETRY], "meta_keys": EVAL_META_KEYS},
            ],
        },
    ]


def tiny_eval_config(ann_file: str = "nuscenes2d_temporal_infos_val.pkl", **dlc) -> dict:
    """``tiny_config`` with upstream-style ``data.test`` / ``data.val`` entries and test pipeline."""
    cfg = tiny_config(**dlc)
    cfg["test_pipeline"] = eval_pipeline(cfg)
    split = {"type": "CustomNuScenesDataset", "pipeline": cfg["test_pipeline"], "ann_file": ann_file,
             "classes": CLASSES, "modality": {"use_camera": True}, "queue_length": 1,
             "collect_keys": [*GEOMETRY, "img", "img_metas"]}  # fmt: skip
    cfg["data"].update(test=dict(split), val=dict(split), nonshuffler_sampler={"type": "DistributedSampler"})
    return cfg


def write_eval_infos(root: Path, drop: int = 1) -> Path:
    """The tiny set's infos without the last ``drop`` frames (in time), as the val info file beside
    them: 11 frames for the default, a size that is no multiple of 2 or 3."""
    data = pickle.loads((root / "nuscenes2d_temporal_infos_train.pkl").read_bytes())
    infos = sorted(data["infos"], key=lambda e: e["timestamp"])[: len(data["infos"]) - drop]
    path = root / "nuscenes2d_temporal_infos_val.pkl"
    path.write_bytes(pickle.dumps({"infos": infos, "metadata": data["metadata"]}))
    return path


def own_infos(root: Path, tmp_path: Path) -> Path:
    """A copy of the tiny info file with content of its own (a frame-store key no other test shares)."""
    data = pickle.loads((root / "nuscenes2d_temporal_infos_train.pkl").read_bytes())
    data["metadata"] = {"version": "v1.0-mini", "copy": str(tmp_path)}
    path = tmp_path / "infos.pkl"
    path.write_bytes(pickle.dumps(data))
    return path
