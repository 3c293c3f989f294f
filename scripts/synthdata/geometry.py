"""Rigid-body maths in nuScenes conventions: quaternions (w, x, y, z), boxes, projection, clipping."""

from __future__ import annotations

import numpy as np

CANVAS = (1600.0, 900.0)  # the converter's hard-coded 2D canvas (width, height)


def quat_from_ypr(yaw: float, pitch: float = 0.0, roll: float = 0.0) -> np.ndarray:
    """Quaternion (w, x, y, z) of R = Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
    cp, sp = np.cos(pitch / 2), np.sin(pitch / 2)
    cr, sr = np.cos(roll / 2), np.sin(roll / 2)
    return np.array(
        [
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ]
    )


def quat_to_matrix(q: np.ndarray | list[float]) -> np.ndarray:
    """3x3 rotation matrix of a (not necessarily unit) quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of a 3x3 rotation matrix."""
    m = np.asarray(m, dtype=np.float64)
    t = np.trace(m)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    q = np.array(q)
    return q if q[0] >= 0 else -q


def quat_yaw(q: np.ndarray) -> float:
    """First element of pyquaternion's `yaw_pitch_roll` (the value the converter stores as box yaw).

    Note the sign of the x*y term: for rotations with pitch/roll this is not atan2(R10, R00).
    """
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return float(np.arctan2(2 * (w * z - x * y), 1 - 2 * (y * y + z * z)))


def transform(rot: np.ndarray, trans: np.ndarray) -> np.ndarray:
    """4x4 homogeneous matrix from a 3x3 rotation and a translation."""
    out = np.eye(4)
    out[:3, :3] = rot
    out[:3, 3] = trans
    return out


def pose_matrix(rotation_q: list[float], translation: list[float]) -> np.ndarray:
    """4x4 matrix (child -> parent) of a nuScenes record's `rotation` quaternion and `translation`."""
    return transform(quat_to_matrix(rotation_q), np.asarray(translation, dtype=np.float64))


def rigid_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform."""
    r = m[:3, :3]
    return transform(r.T, -r.T @ m[:3, 3])


def apply(m: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Apply a 4x4 transform to (N, 3) points."""
    return pts @ m[:3, :3].T + m[:3, 3]


def box_corners(center: np.ndarray, wlh: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """(8, 3) corners of a box in the devkit's order (x forward = length, y left = width, z up)."""
    w, length, h = wlh
    x = length / 2 * np.array([1, 1, 1, 1, -1, -1, -1, -1])
    y = w / 2 * np.array([1, -1, -1, 1, 1, -1, -1, 1])
    z = h / 2 * np.array([1, 1, -1, -1, 1, 1, -1, -1])
    return np.stack([x, y, z], axis=1) @ rot.T + center


# The 6 faces of a box as corner indices (outward order is irrelevant: faces are painted, not culled).
BOX_FACES = ((0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (3, 2, 6, 7), (0, 3, 7, 4), (1, 2, 6, 5))


def project(k: np.ndarray, pts_cam: np.ndarray) -> np.ndarray:
    """Pinhole projection of (N, 3) camera-frame points to (N, 2) pixels (z must be > 0)."""
    uvw = pts_cam @ k.T
    return uvw[:, :2] / uvw[:, 2:3]


def _clip(pts: list[np.ndarray], axis: int, bound: float, keep_less: bool, snap: bool) -> list[np.ndarray]:
    """One Sutherland-Hodgman step: the polygon `pts` clipped to `pts[axis] <= bound` (`keep_less`)
    or `>= bound`; `snap` puts the cut points exactly on the bound."""
    out: list[np.ndarray] = []
    for i in range(len(pts)):
        a, b = pts[i], pts[(i + 1) % len(pts)]
        a_in = a[axis] <= bound if keep_less else a[axis] >= bound
        b_in = b[axis] <= bound if keep_less else b[axis] >= bound
        if a_in:
            out.append(a)
        if a_in != b_in:
            t = (bound - a[axis]) / (b[axis] - a[axis])
            cut = a + t * (b - a)
            if snap:
                cut[axis] = bound
            out.append(cut)
    return out


def clip_polygon_near(poly_cam: np.ndarray, z_near: float = 0.05) -> np.ndarray:
    """Sutherland-Hodgman clip of a 3D camera-frame polygon (N, 3) to z >= z_near."""
    return np.array(_clip(list(poly_cam), 2, z_near, keep_less=False, snap=False)).reshape(-1, 3)


def clip_polygon_rect(poly: np.ndarray, w: float, h: float) -> np.ndarray:
    """Sutherland-Hodgman clip of a 2D polygon (N, 2) to the rectangle [0, w] x [0, h]; the cut
    points lie exactly on its edges, like shapely's intersection with the canvas."""
    pts = [np.asarray(p, dtype=np.float64) for p in poly]
    for axis, bound, keep_less in ((0, 0.0, False), (0, w, True), (1, 0.0, False), (1, h, True)):
        pts = _clip(pts, axis, bound, keep_less, snap=True)
    return np.array(pts).reshape(-1, 2)


def convex_hull(pts: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull (monotone chain) of (N, 2) points."""
    p = sorted({(float(x), float(y)) for x, y in pts})
    if len(p) <= 2:
        return np.array(p).reshape(-1, 2)

    def cross(o: tuple, a: tuple, b: tuple) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple] = []
    for q in p:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    upper: list[tuple] = []
    for q in reversed(p):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1])


def polygon_area(poly: np.ndarray) -> float:
    if len(poly) < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def canvas_box(
    corners_cam: np.ndarray, k: np.ndarray
) -> tuple[tuple[float, float, float, float] | None, bool]:
    """2D box of a camera-frame box as StreamPETR's converter defines it.

    Corners with z > 0 are projected, their convex hull is intersected with the 1600x900 canvas and the
    intersection's extent is returned (None if empty). The second value flags a degenerate case the
    converter cannot handle (a hull or intersection that is a point or a segment): such boxes must not
    be generated.
    """
    front = corners_cam[corners_cam[:, 2] > 0]
    if len(front) == 0:
        return None, False
    hull = convex_hull(project(k, front))
    if len(hull) < 3 or polygon_area(hull) < 1e-6:
        xs, ys = hull[:, 0], hull[:, 1]
        touches = (xs.max() >= 0) and (xs.min() <= CANVAS[0]) and (ys.max() >= 0) and (ys.min() <= CANVAS[1])
        return None, bool(touches)
    inter = clip_polygon_rect(hull, *CANVAS)
    if len(inter) == 0:
        return None, False
    if polygon_area(inter) < 1e-3:
        return None, True
    return (
        float(inter[:, 0].min()),
        float(inter[:, 1].min()),
        float(inter[:, 0].max()),
        float(inter[:, 1].max()),
    ), False
