"""The geometry of upstream's training transforms (numpy, and torch where upstream rounds in float32).

Boxes are (N, 9) arrays ``x, y, z (bottom centre), dx, dy, dz, yaw, vx, vy`` like mmdet3d's
``LiDARInstance3DBoxes``; camera matrices are (6, 4, 4).
"""

from __future__ import annotations

import numpy as np
import torch

from ..sampling.augment import AugDraw


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
    Everything in float32 torch with upstream's operation order, so the results round as upstream's
    do (bit for bit on the same torch build)."""
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


def limit_period(val: np.ndarray, offset: float = 0.5, period: float = np.pi) -> np.ndarray:
    return val - np.floor(val / period + offset) * period


def filter_objects(
    boxes: np.ndarray, labels: np.ndarray, point_cloud_range: tuple[float, ...], num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """ObjectRangeFilter (BEV centre strictly inside x/y range; yaw limited to [-pi, pi)) followed by
    ObjectNameFilter (labels in 0..num_classes-1)."""
    x0, y0, _, x1, y1, _ = np.asarray(point_cloud_range, dtype=np.float32)
    keep = (boxes[:, 0] > x0) & (boxes[:, 1] > y0) & (boxes[:, 0] < x1) & (boxes[:, 1] < y1)
    boxes, labels = boxes[keep].copy(), labels[keep]
    boxes[:, 6] = limit_period(boxes[:, 6], 0.5, 2 * np.pi)
    keep = (labels >= 0) & (labels < num_classes)
    return boxes[keep], labels[keep]


def box_corners(boxes: np.ndarray) -> np.ndarray:
    """(N, 8, 3) corners of bottom-centred yawed boxes (first 4 at the bottom)."""
    signs = np.array(
        [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0], [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]],
        dtype=np.float64,
    )
    half = boxes[:, None, 3:6] * np.array([0.5, 0.5, 1.0])
    local = signs[None] * half
    c, s = np.cos(boxes[:, 6]), np.sin(boxes[:, 6])
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (N, 2, 2)
    xy = np.einsum("nij,nkj->nki", rot, local[..., :2])
    return np.concatenate([xy, local[..., 2:]], -1) + boxes[:, None, :3]


def project(lidar2img: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (..., 3) LiDAR points with a 4x4 ``lidar2img``: pixel (..., 2) and depth (...)."""
    hom = np.concatenate([points, np.ones(points.shape[:-1] + (1,))], -1) @ lidar2img.T
    depth = hom[..., 2]
    return hom[..., :2] / np.maximum(depth, 1e-6)[..., None], depth
