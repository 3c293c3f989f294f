"""Geometry of the transforms: image affine (with upstream's float32 resize ratio), 2D labels, occlusion
filter, BEV rotation/scale."""

from __future__ import annotations

import numpy as np
import pytest
from box_match import project
from dali_streampetr.batch.transforms import (
    AugDraw,
    apply_bev,
    apply_ida,
    filter_invisible,
    filter_objects,
    ida_matrix,
    transform_boxes2d,
)
from float_tolerance import float_atol, product_scale, projection_atol

FINAL = (256, 704)


def make_draw(resize=0.5, crop_w=48, flip=False, rot=0.0, scale=1.0, trans=(0.0, 0.0, 0.0)) -> AugDraw:
    new_w, new_h = int(1600 * resize), int(900 * resize)
    crop_h = new_h - 256
    return AugDraw(
        resize, (new_w, new_h), (crop_w, crop_h, crop_w + 704, crop_h + 256), flip, 0.0, rot, scale, trans
    )


# Independent oracle: float64 numpy written from mmdet3d's LiDARInstance3DBoxes.rotate / scale /
# translate (a counter-clockwise rotation by ``angle`` about z), not from dali_streampetr.batch.transforms.
def rotated_scaled_boxes(boxes: np.ndarray, angle: float, scale: float, trans: tuple) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    out = np.array(boxes, dtype=np.float64)
    out[:, :2] = out[:, :2] @ rot.T
    out[:, 6] += angle
    out[:, 7:9] = out[:, 7:9] @ rot.T
    out[:, :6] *= scale
    out[:, 7:9] *= scale
    out[:, :3] += trans
    return out


def test_ida_matrix_is_resize_crop_flip():
    uv = np.array([[100.0, 700.0], [1500.0, 850.0]])
    for flip in (False, True):
        d = make_draw(flip=flip)
        got = (np.c_[uv, np.ones(2)] @ ida_matrix(d).T)[:, :2]
        want = uv * 0.5 - [48, 194]
        if flip:
            want[:, 0] = 704 - want[:, 0]
        np.testing.assert_array_equal(got, want)  # exact: halves and integers below 2**52, in float64


def test_ida_uses_the_float32_resize_ratio() -> None:
    """An upstream quirk the loader reproduces (found by the equivalence harness, tests/equivalence)."""
    draw = AugDraw(0.4710518892666459, (753, 423), (31, 167, 735, 423), True, 0.0, 0.2, 1.01, (0.0, 0.0, 0.0))
    m = ida_matrix(draw)
    assert m[1, 1] == float(np.float32(draw.resize)) and m[0, 0] == -m[1, 1]
    assert np.array_equal(m.astype(np.float32).astype(np.float64), m)  # every entry exact in float32
    k = np.eye(4)[None].repeat(2, 0)
    intr, _ = apply_ida(k, np.eye(4, dtype=np.float32)[None].repeat(2, 0), draw)
    assert intr[0, 0, 0] == -float(np.float32(draw.resize)) and intr[0, 0, 2] == 31 + 704


def test_apply_ida_keeps_projection_consistent():
    rng = np.random.default_rng(0)
    k = np.eye(4)
    k[:3, :3] = [[1266, 0, 816], [0, 1266, 491], [0, 0, 1]]
    ext = np.eye(4, dtype=np.float32)
    pts = rng.uniform([-5, -3, 5], [5, 3, 40], (10, 3))
    d = make_draw(flip=True)
    intr, l2i = apply_ida(k[None], ext[None], d)
    uv, _ = project(k @ ext, pts)
    uv_aug, _ = project(l2i[0], pts)
    want = (np.c_[uv, np.ones(10)] @ ida_matrix(d).T)[:, :2]
    # float64: K' = ida K and K' ext (3 + 4 roundings) and the projection (5) on one side; the
    # projection (5) and the affine (3 terms: 0.5 u and a shift of 704 px) on the other
    atol = projection_atol(np.float64, l2i[0], pts, 3 + 4 + 5).max()
    atol += 0.5 * projection_atol(np.float64, k @ ext, pts, 5).max()
    atol += float_atol(np.float64, 0.5 * np.abs(uv).max() + 704, 3)
    np.testing.assert_allclose(uv_aug, want, rtol=0, atol=atol)
    atol = float_atol(np.float64, product_scale(intr[0], ext), 2 * 4)  # the same 4-term products
    np.testing.assert_allclose(l2i[0], intr[0] @ ext, rtol=0, atol=atol)


def test_boxes2d_clip_min_size_before_flip_and_mirror():
    d = make_draw(resize=0.5, crop_w=48)
    boxes = np.array([[100, 400, 300, 600], [96, 400, 99, 600], [1500, 800, 1700, 1000]], dtype=np.float32)
    centres = np.array([[200, 500], [97, 500], [1600, 900]], dtype=np.float32)
    labels, depths = np.array([1, 2, 3]), np.array([5, 6, 7], dtype=np.float32)
    b, c, lab, dep = transform_boxes2d(boxes, centres, labels, depths, d, FINAL)
    assert lab.tolist() == [1, 3]  # the 1.5 px wide box is dropped
    # exact: integer pixels times 0.5 minus integer shifts, clipped and mirrored, in float32
    np.testing.assert_array_equal(b, [[2, 6, 102, 106], [702, 206, 704, 256]])
    np.testing.assert_array_equal(c, [[52, 56], [704, 256]])  # centres clipped to the canvas
    bf, cf, *_ = transform_boxes2d(boxes, centres, labels, depths, make_draw(crop_w=48, flip=True), FINAL)
    np.testing.assert_array_equal(bf, [[704 - 102, 6, 704 - 2, 106], [0, 206, 2, 256]])
    np.testing.assert_array_equal(cf[:, 0], 704 - c[:, 0])
    assert b.dtype == np.float32 and c.dtype == np.float32


def test_filter_invisible_keeps_upstream_quirks():
    # far box (index 0 after the depth sort), a mid box fully hidden by a near box
    boxes = np.array([[10, 10, 50, 50], [100, 100, 150, 150], [90, 90, 160, 160]], dtype=np.float32)
    depths = np.array([50.0, 30.0, 10.0], dtype=np.float32)
    centres, labels = boxes[:, :2].copy(), np.array([0, 1, 2])
    b, _, lab, dep = filter_invisible(boxes[::-1], centres[::-1], labels[::-1], depths[::-1], FINAL)
    assert lab.tolist() == [0, 2] and dep.tolist() == [50.0, 10.0]  # depth-descending, mid box gone
    # index 0 shares the background value: kept although fully covered, while background remains
    hidden = np.array([[10, 10, 20, 20], [0, 0, 40, 40]], dtype=np.float32)
    _, _, lab, _ = filter_invisible(hidden, hidden[:, :2], np.array([7, 8]), np.array([9.0, 1.0]), FINAL)
    assert lab.tolist() == [7, 8]
    # ... and dropped once a nearer box covers the whole canvas
    full = np.array([[10, 10, 20, 20], [0, 0, 704, 256]], dtype=np.float32)
    _, _, lab, _ = filter_invisible(full, full[:, :2], np.array([7, 8]), np.array([9.0, 1.0]), FINAL)
    assert lab.tolist() == [8]


def bev_steps64(angle: float, scale: float, trans: tuple) -> list[tuple[np.ndarray, np.ndarray]]:
    """(M, M^-1) in float64 for GlobalRotScaleTransImage's rotation (by -angle), scale and translation
    steps, in that order: the factors whose magnitudes bound the float32 products of ``apply_bev``."""
    c, s = np.cos(angle), np.sin(angle)
    rot, scl, shift = np.eye(4), np.diag([scale, scale, scale, 1.0]), np.eye(4)
    rot[:2, :2] = [[c, s], [-s, c]]
    shift[:3, 3] = trans
    return [(m, np.linalg.inv(m)) for m in (rot, scl, shift)]


# apply_bev's float32 chain, counted as in tests/float_tolerance.py: each of the three steps is a
# 4-term product (4 roundings) by a factor rounded once and, for M^-1, inverted by LU (3 x 4 more)
STEP_OPS = 3 * 4 + 3 * (1 + 12)


@pytest.mark.parametrize("reverse", [True, False])
def test_bev_rotation_scale_consistent_between_boxes_and_matrices(reverse):
    """The matrices always move points by M = T S R(-angle); the boxes follow M with ``reverse_angle``
    (StreamPETR's configs) and turn the other way without it (upstream's other setting)."""
    rng = np.random.default_rng(1)
    boxes = np.c_[rng.uniform(-40, 40, (5, 3)), rng.uniform(1, 4, (5, 3)), rng.uniform(-3, 3, (5, 3))]
    boxes = boxes.astype(np.float32)
    l2i = rng.normal(size=(6, 4, 4)) + np.eye(4)
    pose = np.eye(4, dtype=np.float32)
    pose[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    pose[:3, 3] = [10, 20, 1]
    pose_inv = np.linalg.inv(pose).astype(np.float32)
    trans = (0.5, -0.25, 0.125)
    d = make_draw(rot=0.3, scale=1.04, trans=trans)
    l2i2, pose2, pose_inv2, boxes2 = apply_bev(l2i, pose, pose_inv, boxes, d, reverse)
    steps = bev_steps64(0.3, 1.04, trans)
    m_inv = [m_i for _, m_i in steps]  # pose2 = pose R^-1 S^-1 T^-1
    m_fwd = [m for m, _ in steps][::-1]  # pose_inv2 = T S R pose_inv
    m_inv_t = [m.T for m in m_inv[::-1]]  # pose2.T = T^-T S^-T R^-T pose.T
    # both chains (STEP_OPS each), pose_inv's cast (+1 for float64's inv) and the float32 product (4)
    atol = float_atol(np.float32, product_scale(pose, *m_inv, *m_fwd, pose_inv), 2 * STEP_OPS + 2 + 4)
    np.testing.assert_allclose(pose2 @ pose_inv2, np.eye(4), rtol=0, atol=atol)
    # where the matrices expect every point: M p (independent of the flag); float64 products of the
    # float32 chains (l2i2 also rounds l2i once), the float64 oracle counted as one more float32 step
    moved = rotated_scaled_boxes(boxes, -0.3, 1.04, trans)
    hom, hom_m = np.c_[boxes[:, :3], np.ones(5)], np.c_[moved[:, :3], np.ones(5)]
    atol = float_atol(np.float32, product_scale(np.abs(hom_m), *m_inv_t, l2i[0].T), STEP_OPS + 2)
    np.testing.assert_allclose(hom_m @ l2i2[0].T, hom @ l2i[0].T, rtol=0, atol=atol)  # same pixels
    atol = float_atol(np.float32, product_scale(np.abs(hom_m), *m_inv_t, pose.T), STEP_OPS + 1)
    np.testing.assert_allclose(
        hom_m @ pose2.T, hom @ pose.T.astype(np.float64), rtol=0, atol=atol
    )  # world pt
    # the boxes: rotated by -angle with reverse_angle, by +angle without; scaled and translated alike.
    # float32: the angle, its sine and cosine, the scale and the translation rounded once each, a
    # 3-term rotation, the scaling and the shift; terms up to (|x| + |y|) * 1.04 + |t| (metres)
    want = moved if reverse else rotated_scaled_boxes(boxes, 0.3, 1.04, trans)
    atol = float_atol(np.float32, (np.abs(boxes[:, :2]).sum(1).max() + 1) * 1.04 + 0.5, 5 + 3 + 2)
    np.testing.assert_allclose(boxes2, want, rtol=0, atol=atol)
    if not reverse:  # the boxes then leave the objects they annotate: 0.6 rad off, metres away
        assert np.abs(boxes2[:, :2] - moved[:, :2]).max() > 1.0
        return

    def heading(b):
        return np.c_[np.cos(b[:, 6]), np.sin(b[:, 6]), np.zeros(len(b)), np.zeros(len(b))]

    # world heading and world velocity are unchanged by the augmentation (M^-1 undoes the scale):
    # float64 products of pose2 (its chain) with the float32 yaw (+= the rounded angle: 2 steps on
    # |yaw| + 0.3, then cos/sin: 1) or velocity (rotated, scaled: 2 + 2 + 2 steps)
    yaw_atol = float_atol(np.float32, np.abs(boxes[:, 6]).max() + 0.3, 3)
    atol = float_atol(np.float32, product_scale(heading(boxes), *m_inv_t, pose.T) * 1.04, STEP_OPS + 1)
    np.testing.assert_allclose(
        heading(boxes2) @ pose2.T * 1.04, heading(boxes) @ pose.T, rtol=0, atol=atol + yaw_atol * 1.04
    )
    vel = np.c_[boxes[:, 7:9], np.zeros((5, 2))]
    vel2 = np.c_[boxes2[:, 7:9], np.zeros((5, 2))]
    atol = float_atol(np.float32, product_scale(np.abs(vel), *m_inv_t, pose.T) * 1.04, STEP_OPS + 6)
    np.testing.assert_allclose(vel2 @ pose2.T, vel @ pose.T, rtol=0, atol=atol)


def test_object_filters():
    boxes = np.zeros((4, 9), dtype=np.float32)
    boxes[:, 0] = [0, 51.2, 10, -20]
    boxes[:, 6] = [4.0, 0, -3.5, 0]
    labels = np.array([1, 2, -1, 9])
    out, lab = filter_objects(boxes, labels, (-51.2, -51.2, -5, 51.2, 51.2, 3), 10)
    assert lab.tolist() == [1, 9]  # edge of the range (strict) and the unknown class are dropped
    # float32 limit_period: 2 pi rounded, a division, + 0.5, a product and a difference, on terms <= 2 pi
    np.testing.assert_allclose(
        out[:, 6], [4.0 - 2 * np.pi, 0], rtol=0, atol=float_atol(np.float32, 2 * np.pi, 5)
    )
