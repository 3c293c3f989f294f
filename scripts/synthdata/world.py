"""The records of the synthetic world: sensor calibrations, ego poses, boxes, key frames, object
instances, the road and the scene that holds them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import geometry as g

IMG_W, IMG_H = 1600, 900
KEYFRAME_DT = 0.5  # s between key frames (nuScenes annotates at 2 Hz)


@dataclass
class Calib:
    channel: str
    translation: np.ndarray  # sensor -> ego
    rotation: np.ndarray  # quaternion (w, x, y, z), sensor -> ego
    intrinsic: np.ndarray | None = None  # 3x3 for cameras

    @property
    def matrix(self) -> np.ndarray:
        return g.transform(g.quat_to_matrix(self.rotation), self.translation)


@dataclass
class Pose:
    timestamp: int  # microseconds
    translation: np.ndarray  # ego -> global
    rotation: np.ndarray

    @property
    def matrix(self) -> np.ndarray:
        return g.transform(g.quat_to_matrix(self.rotation), self.translation)


@dataclass
class Ann:
    instance: int
    translation: np.ndarray  # box centre, global frame
    size: np.ndarray  # w, l, h
    rotation: np.ndarray  # quaternion, yaw about the global z axis
    attributes: list[str]
    num_lidar_pts: int = 0
    num_radar_pts: int = 0
    visibility: str = "4"

    @property
    def corners(self) -> np.ndarray:
        return g.box_corners(self.translation, self.size, g.quat_to_matrix(self.rotation))


@dataclass
class Frame:
    timestamp: int
    lidar_pose: Pose
    cam_poses: dict[str, Pose]
    anns: list[Ann] = field(default_factory=list)


@dataclass
class Instance:
    category: str
    frames: tuple[int, int]  # first and last frame index (inclusive)


@dataclass
class Path:
    """A road centreline of constant curvature; the ego drives along it."""

    origin: np.ndarray
    heading0: float
    curvature: float

    def at(self, s: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, y, heading) at arc length s."""
        c, h0 = self.curvature, self.heading0
        h = h0 + c * s
        x = self.origin[0] + (np.sin(h) - np.sin(h0)) / c
        y = self.origin[1] - (np.cos(h) - np.cos(h0)) / c
        return x, y, h

    def point(self, s: float, lateral: float) -> tuple[np.ndarray, float]:
        x, y, h = self.at(s)
        return np.array([x - lateral * np.sin(h), y + lateral * np.cos(h)]), float(h)


@dataclass
class Scene:
    index: int
    name: str
    split: str
    location: str
    logfile: str
    date: str
    calibs: dict[str, Calib]
    path: Path
    ego_speed: float
    frames: list[Frame]
    instances: list[Instance]
