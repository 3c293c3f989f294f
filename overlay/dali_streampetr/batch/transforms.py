"""Upstream's training transforms on one frame, given its random parameters (:class:`AugDraw`, drawn
by :mod:`..sampling.plan`): the training targets (everything but the pixels,
:func:`frame_targets`), their geometry (numpy, and torch where upstream rounds in float32), and where
each camera image is decoded and resampled (:func:`image_params`; the parameter row that carries it
to the DALI graph is :mod:`.wire`'s).

Boxes are (N, 9) arrays ``x, y, z (bottom centre), dx, dy, dz, yaw, vx, vy`` like mmdet3d's
``LiDARInstance3DBoxes``; camera matrices are (6, 4, 4).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..frames.records import Frame
from ..settings import LoaderConfig


@dataclass(frozen=True)
class AugDraw:
    """Everything random about one frame (all 6 cameras share it, as upstream)."""

    resize: float
    resize_dims: tuple[int, int]  # (newW, newH)
    crop: tuple[int, int, int, int]  # (x0, y0, x1, y1) in the resized image
    flip: bool
    rotate: float
    rot_angle: float
    scale_ratio: float
    translation: tuple[float, float, float]

    def as_dict(self) -> dict:
        return asdict(self)


def ida_matrix(draw: AugDraw) -> np.ndarray:
    """3x3 image-plane affine of resize -> crop -> optional horizontal flip (rotation is 0), with the
    resize ratio rounded to float32 like upstream's torch ``ida_mat`` (every entry is exact in float32)."""
    resize = float(np.float32(draw.resize))
    crop_w, crop_h, x1, _ = draw.crop
    m = np.diag([resize, resize, 1.0])
    m[:2, 2] = (-crop_w, -crop_h)
    if draw.flip:
        m = np.array([[-1.0, 0, x1 - crop_w], [0, 1, 0], [0, 0, 1]]) @ m
    return m


def apply_ida(intrinsics: np.ndarray, extrinsics: np.ndarray, draw: AugDraw) -> tuple[np.ndarray, np.ndarray]:
    """New intrinsics (``ida @ K``) and ``lidar2img = intrinsics @ extrinsics`` for every view, float64,
    with upstream's operations (a torch float64 matmul, then numpy per view) so they round alike."""
    ida = torch.from_numpy(ida_matrix(draw))
    out = np.array(intrinsics, dtype=np.float64)
    lidar2img = np.empty_like(out)
    for view in range(len(out)):
        out[view, :3, :3] = (ida @ torch.from_numpy(out[view, :3, :3].copy())).numpy()
        lidar2img[view] = out[view] @ extrinsics[view]
    return out, lidar2img


def transform_boxes2d(
    bboxes: np.ndarray,
    centers2d: np.ndarray,
    labels: np.ndarray,
    depths: np.ndarray,
    draw: AugDraw,
    final_dim: tuple[int, int],
    min_size: float = 2.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scale, crop-shift, clip to the canvas, drop boxes under ``min_size`` (measured before the
    flip), mirror; centres are clipped to the canvas too. Same dtypes as upstream (float32 in)."""
    fH, fW = final_dim
    shift = np.array(draw.crop[:2], dtype=np.float64)
    b = bboxes * draw.resize
    b[:, [0, 2]] = np.clip(b[:, [0, 2]] - shift[0], 0, fW)
    b[:, [1, 3]] = np.clip(b[:, [1, 3]] - shift[1], 0, fH)
    keep = ((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size)
    c = centers2d * draw.resize
    c[:, 0] = np.clip(c[:, 0] - shift[0], 0, fW)
    c[:, 1] = np.clip(c[:, 1] - shift[1], 0, fH)
    if draw.flip:
        b[:, [0, 2]] = fW - b[:, [2, 0]]
        c[:, 0] = fW - c[:, 0]
    return b[keep], c[keep], labels[keep], depths[keep]


def filter_invisible(
    bboxes: np.ndarray,
    centers2d: np.ndarray,
    labels: np.ndarray,
    depths: np.ndarray,
    final_dim: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Depth-ordered occlusion filter, exactly as upstream: paint the integer boxes far-to-near into a
    zero-initialised index map and keep the indices that survive. Index 0 (the farthest box) shares
    its value with the background, so it is kept whenever any background pixel remains. The output
    is in depth-descending order."""
    fH, fW = final_dim
    order = np.argsort(-depths, axis=0, kind="stable")
    bboxes, centers2d, labels, depths = bboxes[order], centers2d[order], labels[order], depths[order]
    ints = np.concatenate([np.ceil(bboxes[:, :2]), np.floor(bboxes[:, 2:])], axis=1).astype(np.int64)
    index_map = np.zeros((fH, fW), dtype=np.int32)
    for i, (u1, v1, u2, v2) in enumerate(ints):
        index_map[v1:v2, u1:u2] = i
    kept = np.flatnonzero(np.bincount(index_map.ravel(), minlength=len(bboxes)))  # = np.unique, sorted
    return bboxes[kept], centers2d[kept], labels[kept], depths[kept]


def _bev_steps(draw: AugDraw) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(M, M^-1) float32 for rotation, scale, translation, built like upstream (torch, float32)."""
    cos, sin = torch.cos(torch.tensor(draw.rot_angle)), torch.sin(torch.tensor(draw.rot_angle))
    rot = torch.tensor([[cos, sin, 0, 0], [-sin, cos, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    s = draw.scale_ratio
    scl = torch.tensor([[s, 0, 0, 0], [0, s, 0, 0], [0, 0, s, 0], [0, 0, 0, 1]])
    trans = torch.eye(4, 4)
    trans[:3, -1] = torch.from_numpy(np.asarray(draw.translation, dtype=np.float64)).reshape(1, 3)
    return [(m, torch.inverse(m)) for m in (rot, scl, trans)]


def _rotate_boxes(boxes: torch.Tensor, angle: float) -> None:
    """``LiDARInstance3DBoxes.rotate(angle)`` of mmdet3d rc6 in place, with its float32 operations."""
    a = boxes.new_tensor(np.array(angle))
    angles = torch.full((1,), a)
    sin, cos = torch.sin(angles), torch.cos(angles)
    ones, zeros = torch.ones_like(cos), torch.zeros_like(cos)
    rot_t = torch.stack(
        [torch.stack([cos, sin, zeros]), torch.stack([-sin, cos, zeros]), torch.stack([zeros, zeros, ones])]
    )
    boxes[:, 0:3] = torch.einsum("aij,jka->aik", boxes[None, :, 0:3], rot_t)[0]
    rot_t = torch.einsum("jka->ajk", rot_t)[0]
    boxes[:, 6] += a
    boxes[:, 7:9] = boxes[:, 7:9] @ rot_t[:2, :2]


def apply_bev(
    lidar2img: np.ndarray,
    ego_pose: np.ndarray,
    ego_pose_inv: np.ndarray,
    boxes: np.ndarray,
    draw: AugDraw,
    reverse_angle: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rotate/scale/translate the LiDAR frame with GlobalRotScaleTransImage's point map M = T S R
    (R = [[c, s], [-s, c]]: a rotation by -angle about z; S = scale; T = translation), one step at a
    time: ``lidar2img`` and ``ego_pose`` get ``@ M^-1``, ``ego_pose_inv`` gets ``M @``. Boxes are
    rotated by ``-angle`` (``reverse_angle``, consistent with M) or ``+angle`` (upstream's other
    setting): centre, yaw and velocity; then scaled (centre, size, velocity) and translated.
    In float32 torch with upstream's operation order: bit for bit on the same torch build."""
    l2i = [torch.tensor(m).float() for m in lidar2img]
    pose = torch.tensor(np.asarray(ego_pose, dtype=np.float32))
    pose_inv = torch.tensor(np.asarray(ego_pose_inv, dtype=np.float32))
    for m, m_inv in _bev_steps(draw):
        pose = pose @ m_inv
        pose_inv = m @ pose_inv
        l2i = [v @ m_inv for v in l2i]
    out = torch.from_numpy(np.array(boxes, dtype=np.float32))
    _rotate_boxes(out, -draw.rot_angle if reverse_angle else draw.rot_angle)
    out[:, :6] *= draw.scale_ratio
    out[:, 7:] *= draw.scale_ratio
    out[:, :3] += out.new_tensor(np.asarray(draw.translation, dtype=np.float64))
    return torch.stack(l2i).numpy(), pose.numpy(), pose_inv.numpy(), out.numpy()


def filter_objects(
    boxes: np.ndarray, labels: np.ndarray, point_cloud_range: tuple[float, ...], num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """ObjectRangeFilter (BEV centre strictly inside x/y range; yaw limited to [-pi, pi)) followed by
    ObjectNameFilter (labels in 0..num_classes-1)."""
    x0, y0, _, x1, y1, _ = np.asarray(point_cloud_range, dtype=np.float32)
    keep = (boxes[:, 0] > x0) & (boxes[:, 1] > y0) & (boxes[:, 0] < x1) & (boxes[:, 1] < y1)
    boxes, labels = boxes[keep].copy(), labels[keep]
    yaw, period = boxes[:, 6], 2 * np.pi  # mmdet3d's limit_period(yaw, 0.5, 2 * np.pi)
    boxes[:, 6] = yaw - np.floor(yaw / period + 0.5) * period
    keep = (labels >= 0) & (labels < num_classes)
    return boxes[keep], labels[keep]


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


def eval_targets(frame: Frame, draw: AugDraw, cfg: LoaderConfig) -> dict:
    """Everything but the pixels for one frame, as upstream's test pipeline produces it: the test
    resize's ``intrinsics`` and ``lidar2img``, the poses and timestamps as read, and the keys of
    :func:`frame_targets`' annotations as empty arrays (no annotations are read in ``test_mode``)."""
    intrinsics, lidar2img = apply_ida(frame.intrinsics, frame.extrinsics, draw)
    n = len(frame.cam_names)
    return {
        "gt_bboxes_3d": np.zeros((0, 9), dtype=np.float32),
        "gt_labels_3d": np.zeros(0, dtype=np.int64),
        "gt_bboxes": [np.zeros((0, 4), dtype=np.float32) for _ in range(n)],
        "centers2d": [np.zeros((0, 2), dtype=np.float32) for _ in range(n)],
        "gt_labels": [np.zeros(0, dtype=np.int64) for _ in range(n)],
        "depths": [np.zeros(0, dtype=np.float32) for _ in range(n)],
        "lidar2img": lidar2img.astype(np.float32),
        "intrinsics": intrinsics.astype(np.float32),
        "extrinsics": np.asarray(frame.extrinsics, dtype=np.float32),
        "timestamp": np.float64(frame.timestamp),
        "img_timestamp": np.asarray(frame.img_timestamps, dtype=np.float64),
        "ego_pose": np.asarray(frame.ego_pose, dtype=np.float32),
        "ego_pose_inv": np.asarray(frame.ego_pose_inv, dtype=np.float32),
    }


@dataclass(frozen=True)
class ImageParams:
    """Where one camera image is decoded and resampled (all in source pixels, HW order)."""

    decode_start: tuple[int, int]
    decode_shape: tuple[int, int]
    roi_start: tuple[float, float]  # relative to the decoded region
    roi_end: tuple[float, float]
    out_size: tuple[float, float]  # resized extent before padding to final_dim
    flip: bool


def image_params(
    draw: AugDraw, height: int, width: int, final_dim: tuple[int, int], roi: bool
) -> ImageParams:
    """PIL's ``resize(resize_dims).crop(crop)`` as a resize of the source window that maps onto the
    crop: output pixel j samples resized pixel ``crop_x + j``, i.e. source ``(crop_x + j + .5) * W/newW``.
    Crop columns/rows beyond the resized image are left for the black padding."""
    new_w, new_h = draw.resize_dims
    crop_w, crop_h, _, _ = draw.crop
    fH, fW = final_dim
    if crop_h < 0 or crop_w < 0:
        raise ValueError(f"crop {draw.crop} starts outside the resized image {draw.resize_dims}")
    rows, cols = min(fH, new_h - crop_h), min(fW, new_w - crop_w)
    sy, sx = height / new_h, width / new_w
    y0, y1 = crop_h * sy, (crop_h + rows) * sy
    top, bottom = 0, height
    if roi:  # keep the filter's support (2 output pixels of the cubic kernel) plus one row
        margin = math.ceil(2 * max(1.0, sy)) + 1
        top, bottom = max(0, math.floor(y0) - margin), min(height, math.ceil(y1) + margin)
    return ImageParams(
        decode_start=(top, 0),
        decode_shape=(bottom - top, width),
        roi_start=(y0 - top, crop_w * sx),
        roi_end=(y1 - top, (crop_w + cols) * sx),
        out_size=(float(rows), float(cols)),
        flip=draw.flip,
    )
