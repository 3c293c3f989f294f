"""The sensor rig of a synthetic scene: a nuScenes-like lidar and six cameras, each scene's
calibration drawn with small perturbations, and the ego pose along the road at a time."""

from __future__ import annotations

import numpy as np

from . import geometry as g
from .catalog import CAMERAS, LIDAR
from .world import Calib, Path, Pose

# Camera trigger offsets relative to the LIDAR_TOP key frame, in microseconds (the lidar sweeps past them).
CAM_OFFSETS_US = {c: o for c, o in zip(CAMERAS, (12_000, 20_500, 3_600, 37_100, 29_300, 45_200), strict=True)}
CAM_YAWS = {c: np.deg2rad(a) for c, a in zip(CAMERAS, (0.0, -55.0, 55.0, 180.0, 110.0, -110.0), strict=True)}
CAM_MOUNTS = {
    "CAM_FRONT": (1.70, 0.0, 1.51),
    "CAM_FRONT_RIGHT": (1.55, -0.49, 1.50),
    "CAM_FRONT_LEFT": (1.52, 0.49, 1.51),
    "CAM_BACK": (0.03, 0.0, 1.57),
    "CAM_BACK_LEFT": (1.03, 0.48, 1.56),
    "CAM_BACK_RIGHT": (1.04, -0.48, 1.56),
}
# Camera axes (x right, y down, z forward) expressed in the ego frame (x forward, y left, z up).
CAM_BASE = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def calibrations(rng: np.random.Generator) -> dict[str, Calib]:
    """Per-scene calibration: nominal nuScenes-like rig with small random perturbations."""
    out = {}
    lidar_rot = g.quat_from_ypr(-np.pi / 2 + rng.normal(0, 0.004), rng.normal(0, 0.002), rng.normal(0, 0.002))
    out[LIDAR] = Calib(LIDAR, np.array([0.94, 0.0, 1.84]) + rng.normal(0, 0.005, 3), lidar_rot)
    for cam in CAMERAS:
        yaw = CAM_YAWS[cam] + rng.normal(0, 0.005)
        tilt = g.quat_to_matrix(g.quat_from_ypr(0.0, rng.normal(0.0, 0.01), rng.normal(0, 0.004)))
        rot = g.quat_to_matrix(g.quat_from_ypr(yaw)) @ tilt @ CAM_BASE
        f = 800.0 if cam == "CAM_BACK" else 1266.0
        f *= 1.0 + rng.normal(0, 0.003)
        k = np.array(
            [[f, 0.0, 800.0 + rng.normal(0, 8)], [0.0, f, 470.0 + rng.normal(0, 15)], [0.0, 0.0, 1.0]]
        )
        trans = np.array(CAM_MOUNTS[cam]) + rng.normal(0, 0.005, 3)
        out[cam] = Calib(cam, trans, g.matrix_to_quat(rot), k)
    return out


def ego_pose(path: Path, speed: float, t: float, timestamp: int) -> Pose:
    xy, h = path.point(speed * t, 0.0)
    pitch = 0.006 * np.sin(0.7 * t + path.heading0)
    roll = 0.004 * np.sin(1.3 * t)
    return Pose(timestamp, np.array([xy[0], xy[1], 0.0]), g.quat_from_ypr(h, pitch, roll))
