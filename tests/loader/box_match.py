"""Which box a 2D centre belongs to: the one box whose projection through the batch's lidar2img
lands on the centre (pixel) at the centre's depth, both within their float bounds. Boxes closer
than ``NEAR`` to the camera plane are left out: the pixel bound grows as 1/depth there."""

from __future__ import annotations

import numpy as np
from batchview.__main__ import project  # the batch view's projection: lidar2img, then depth
from float_tolerance import float_atol, projection_atol

NEAR = 1.0  # metres


def own_box(
    l2i: np.ndarray, points: np.ndarray, centre, depth: float, ops: int, pixel_ops: int = 4
) -> int | None:
    """Index of the box (row of ``points``, (n, 3) float64) the 2D ``centre`` (u, v) at ``depth``
    projects from, or None when ``depth`` < :data:`NEAR` (not checked). ``AssertionError`` when no
    box, or more than one, matches: a centre near another box's projection is not its own.
    ``ops``: the rounding steps of the matrix and points (tests/float_tolerance.py); ``pixel_ops``:
    those of the stored 2D centre (the pickle's float32, the resize, the shift, the cast)."""
    if depth < NEAR:
        return None
    uv, z = project(l2i, points)
    tol = np.sqrt(2) * (
        projection_atol(np.float32, l2i, points, ops) + float_atol(np.float32, 1600, pixel_ops)
    )
    z_scale = np.abs(np.c_[points, np.ones(len(points))]) @ np.abs(l2i[2])
    z_tol = float_atol(np.float32, z_scale, ops) + float_atol(np.float32, max(depth, 1.0), pixel_ops)
    err = np.hypot(uv[:, 0] - centre[0], uv[:, 1] - centre[1])
    hits = np.flatnonzero((z >= NEAR) & (err <= tol) & (np.abs(z - depth) <= z_tol))
    assert len(hits) == 1, (tuple(centre), depth, err.min(), np.abs(z - depth).min(), hits)
    return int(hits[0])
