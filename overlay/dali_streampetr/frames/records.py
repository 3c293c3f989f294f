"""StreamPETR info pickle -> per-frame numpy records (what ``CustomNuScenesDataset`` derives), one
Python object per info (:func:`frame_records`): the reference the frame store's columns
(:mod:`.info_columns`) are tested against."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .frame_errors import InfoSchemaError
from .info_schema import validate_infos
from .unpickle import read_pickle_file


@dataclass
class Frame:
    """One key frame, in the dataset's (timestamp-sorted) order.

    ``gt_boxes`` are (N, 9) float32 ``x, y, z (bottom centre), dx, dy, dz, yaw, vx, vy`` in the
    LiDAR frame (after ``valid_flag``), ``gt_labels`` (N,) int64 with -1 for names outside the classes
    (float64 when N == 0: upstream's ``np.array([])``). Per-camera 2D arrays keep the pickle's shape
    when empty (the converter writes ``(0,)``), as upstream passes them through untouched.
    """

    token: str
    scene_token: str
    timestamp: float
    has_sweeps: bool
    cam_names: list[str]
    data_paths: list[str]  # as written in the pickle (upstream's ``filename`` meta)
    img_paths: list[str]  # resolved, absolute
    img_timestamps: np.ndarray  # (6,) float64 seconds
    intrinsics: np.ndarray  # (6, 4, 4) float64 viewpad
    extrinsics: np.ndarray  # (6, 4, 4) float32 lidar->camera
    ego_pose: np.ndarray  # (4, 4) float32 lidar->global
    ego_pose_inv: np.ndarray  # (4, 4) float32
    gt_boxes: np.ndarray
    gt_labels: np.ndarray
    bboxes2d: list[np.ndarray]
    labels2d: list[np.ndarray]
    centers2d: list[np.ndarray]
    depths: list[np.ndarray]


def quat_to_matrix(q: Sequence[float]) -> np.ndarray:
    """(w, x, y, z) quaternion -> 3x3 rotation matrix, computed as pyquaternion's ``rotation_matrix``
    (normalise unless within 1e-14 of unit length, then ``Q @ conj(Qbar).T``), so that the float32
    poses built from it round exactly like upstream's."""
    q = np.asarray([float(e) for e in q])
    if not abs(1.0 - np.dot(q, q)) < 1e-14:
        norm = math.sqrt(np.dot(q, q))
        if norm > 0:
            q = q / norm
    w, x, y, z = q
    left = np.array([[w, -x, -y, -z], [x, w, -z, y], [y, z, w, -x], [z, -y, x, w]])
    right = np.array([[w, -x, -y, -z], [x, w, z, -y], [y, -z, w, x], [z, y, -x, w]])
    return np.dot(left, right.conj().transpose())[1:][:, 1:]


def rigid_matrix(rotation: np.ndarray, translation: Sequence[float]) -> np.ndarray:
    """4x4 float32 [R | t] (upstream builds poses in float32)."""
    m = np.eye(4, dtype=np.float32)
    m[:3, :3] = rotation
    m[:3, 3] = translation
    return m


def rigid_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform, float32 like upstream's ``invert_matrix_egopose_numpy``."""
    inv = np.eye(4, dtype=np.float32)
    inv[:3, :3] = m[:3, :3].T
    inv[:3, 3] = -np.dot(m[:3, :3].T, m[:3, 3])
    return inv


def _labels(names: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
    """Like mmdet3d's ``get_ann_info``: ``np.array(list)``, so float64 when there are no boxes."""
    index = {n: i for i, n in enumerate(class_names)}
    labels = [index.get(n, -1) for n in names]
    return np.array(labels, dtype=np.int64) if labels else np.array(labels)


def _per_cam(values: object, dtype: type, width: int) -> np.ndarray:
    """(k, width) array of one camera; an empty one keeps its shape from the pickle, like upstream."""
    arr = np.asarray(values, dtype=dtype)
    return arr.reshape(-1, width) if arr.size else arr


def _frame(info: dict, class_names: Sequence[str], resolve) -> Frame:
    e2g = rigid_matrix(quat_to_matrix(info["ego2global_rotation"]), info["ego2global_translation"])
    l2e = rigid_matrix(quat_to_matrix(info["lidar2ego_rotation"]), info["lidar2ego_translation"])
    ego_pose = e2g @ l2e
    cams = info["cams"]
    intrinsics, extrinsics = [], []
    for cam in cams.values():
        cam2lidar = rigid_matrix(cam["sensor2lidar_rotation"], cam["sensor2lidar_translation"])
        viewpad = np.eye(4)
        k = np.asarray(cam["cam_intrinsic"])
        viewpad[: k.shape[0], : k.shape[1]] = k
        intrinsics.append(viewpad)
        extrinsics.append(rigid_inverse(cam2lidar))
    mask = np.asarray(info["valid_flag"], dtype=bool)
    boxes = np.asarray(info["gt_boxes"], dtype=np.float64).reshape(-1, 7)[mask]
    velocity = np.asarray(info["gt_velocity"], dtype=np.float64).reshape(-1, 2)[mask].copy()
    velocity[np.isnan(velocity[:, 0])] = 0.0
    boxes = np.concatenate([boxes, velocity], axis=1).astype(np.float32)
    boxes[:, 2] -= boxes[:, 5] * 0.5  # nuScenes centre origin (0.5, 0.5, 0.5) -> bottom centre
    return Frame(
        token=info["token"],
        scene_token=info["scene_token"],
        timestamp=info["timestamp"] / 1e6,
        has_sweeps=len(info["sweeps"]) > 0,
        cam_names=list(cams),
        data_paths=[c["data_path"] for c in cams.values()],
        img_paths=[resolve(c["data_path"]) for c in cams.values()],
        img_timestamps=np.array([c["timestamp"] / 1e6 for c in cams.values()], dtype=np.float64),
        intrinsics=np.stack(intrinsics),
        extrinsics=np.stack(extrinsics),
        ego_pose=ego_pose,
        ego_pose_inv=rigid_inverse(ego_pose),
        gt_boxes=boxes,
        gt_labels=_labels(np.asarray(info["gt_names"])[mask], class_names),
        bboxes2d=[_per_cam(b, np.float32, 4) for b in info["bboxes2d"]],
        labels2d=[np.asarray(b, dtype=np.int64).reshape(-1) for b in info["labels2d"]],
        centers2d=[_per_cam(b, np.float32, 2) for b in info["centers2d"]],
        depths=[np.asarray(b, dtype=np.float32).reshape(-1) for b in info["depths"]],
    )


def load_info_file(ann_file: str | Path, *, trusted_pickle: bool) -> tuple[Any, str]:
    """(the info file's object, the SHA-256 of the bytes it was read from), read by the restricted
    unpickler unless ``trusted_pickle`` (:func:`.unpickle.read_pickle_file`). Raises
    ``FileNotFoundError``, or :class:`InfoSchemaError` when the file is not a readable pickle."""
    ann_file = Path(ann_file)
    if not ann_file.is_file():
        raise FileNotFoundError(f"info pickle not found: {ann_file}")
    try:
        return read_pickle_file(ann_file, trusted=trusted_pickle)
    except Exception as exc:
        raise InfoSchemaError(f"{ann_file} is not a readable info pickle: {exc}") from exc


def sorted_infos(data: Any, ann_file: str | Path) -> list[dict]:
    """The validated infos of an unpickled info file, sorted by timestamp (stable), as upstream
    does; an :class:`InfoSchemaError` names ``ann_file``."""
    try:
        return sorted(validate_infos(data), key=lambda e: e["timestamp"])
    except InfoSchemaError as exc:
        raise InfoSchemaError(f"{ann_file}: {exc}") from None


def read_infos(ann_file: str | Path, *, trusted_pickle: bool = False) -> list[dict]:
    """The info pickle's validated infos, sorted by timestamp (stable), as upstream does. The pickle
    is read by the restricted unpickler unless ``trusted_pickle``."""
    return sorted_infos(load_info_file(ann_file, trusted_pickle=trusted_pickle)[0], ann_file)


def frame_records(infos: Sequence[dict], class_names: Sequence[str], resolve=os.fspath) -> list[Frame]:
    """One :class:`Frame` per info (``resolve`` makes ``img_paths`` from the data paths)."""
    return [_frame(info, class_names, resolve) for info in infos]
