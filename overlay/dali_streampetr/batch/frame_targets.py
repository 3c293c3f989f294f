"""The training targets of one frame (everything but the pixels), as upstream's train pipeline makes them."""

from __future__ import annotations

import numpy as np

from ..config.settings import LoaderConfig
from ..frames.records import Frame
from ..sampling.augment import AugDraw
from .transforms import apply_bev, apply_ida, filter_invisible, filter_objects, transform_boxes2d


def frame_targets(frame: Frame, draw: AugDraw, cfg: LoaderConfig) -> dict:
    """Everything but the pixels for one frame, as upstream's train pipeline produces it:
    ObjectRangeFilter, ObjectNameFilter, ResizeCropFlipRotImage (matrices + 2D labels),
    GlobalRotScaleTransImage. Matrices float32, timestamps float64."""
    aug = cfg.aug
    boxes, labels = filter_objects(
        frame.gt_boxes, frame.gt_labels, cfg.point_cloud_range, len(cfg.class_names)
    )
    intrinsics, lidar2img = apply_ida(frame.intrinsics, frame.extrinsics, draw)
    per_cam: dict[str, list[np.ndarray]] = {"gt_bboxes": [], "centers2d": [], "gt_labels": [], "depths": []}
    for cam in range(len(frame.cam_names)):
        b, c, lab, d = frame.bboxes2d[cam], frame.centers2d[cam], frame.labels2d[cam], frame.depths[cam]
        if len(b):
            b, c, lab, d = transform_boxes2d(b, c, lab, d, draw, aug.final_dim, aug.min_size)
        if len(b):
            b, c, lab, d = filter_invisible(b, c, lab, d, aug.final_dim)
        for key, value in zip(per_cam, (b, c, lab, d), strict=True):
            per_cam[key].append(value)
    lidar2img, ego_pose, ego_pose_inv, boxes = apply_bev(
        lidar2img, frame.ego_pose, frame.ego_pose_inv, boxes, draw, aug.reverse_angle
    )
    return {
        "gt_bboxes_3d": boxes,
        "gt_labels_3d": labels,
        **per_cam,
        "lidar2img": lidar2img.astype(np.float32),
        "intrinsics": intrinsics.astype(np.float32),
        "extrinsics": frame.extrinsics.astype(np.float32),
        "timestamp": np.float64(frame.timestamp),
        "img_timestamp": frame.img_timestamps.astype(np.float64),
        "ego_pose": ego_pose.astype(np.float32),
        "ego_pose_inv": ego_pose_inv.astype(np.float32),
    }
