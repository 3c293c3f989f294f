"""The synthetic world: scenes, ego trajectories, sensor calibrations, object instances and their boxes.

Everything is drawn from one `numpy.random.Generator` per scene, seeded from (seed, scene index), so a
scene does not depend on how many scenes are generated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import geometry as g
from .catalog import CAMERAS, LIDAR, LOCATIONS, MINI_SCENES, NAME_MAPPING, SIZES

KEYFRAME_DT = 0.5  # s between key frames (nuScenes annotates at 2 Hz)
SCENE_GAP_US = 3_600_000_000  # scenes start one hour apart: disjoint, increasing time ranges
T0_US = 1_531_881_600_000_000  # 2018-07-18 04:00 UTC
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
IMG_W, IMG_H = 1600, 900


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


def scene_plan(scenes: int) -> list[tuple[str, str]]:
    """(name, split) of each generated scene: the official v1.0-mini scenes, in an interleaved order."""
    if not 1 <= scenes <= len(MINI_SCENES):
        raise ValueError(f"scenes must be in 1..{len(MINI_SCENES)} (the v1.0-mini scene names), got {scenes}")
    return list(MINI_SCENES[:scenes])


def _calibrations(rng: np.random.Generator) -> dict[str, Calib]:
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


def _ego_pose(path: Path, speed: float, t: float, timestamp: int) -> Pose:
    xy, h = path.point(speed * t, 0.0)
    pitch = 0.006 * np.sin(0.7 * t + path.heading0)
    roll = 0.004 * np.sin(1.3 * t)
    return Pose(timestamp, np.array([xy[0], xy[1], 0.0]), g.quat_from_ypr(h, pitch, roll))


@dataclass
class _Spec:
    category: str
    s0: float  # arc length at t = 0
    lateral: float
    speed: float  # along the path (negative: driving the other way)
    yaw_offset: float
    frames: tuple[int, int]
    attributes: tuple[str, ...]
    scale: float = 1.0


def _object_specs(
    rng: np.random.Generator, n_frames: int, ego_speed: float, empty_first: bool
) -> list[_Spec]:
    """Instances of one scene: parked and moving vehicles, cyclists, pedestrians, road furniture, objects of
    classes outside the 10 detection classes, objects outside the 51.2 m range, and short-lived ones."""
    first = 1 if empty_first else 0
    last = n_frames - 1
    specs: list[_Spec] = []

    def add(cat, s0, lat, speed=0.0, yaw=0.0, attrs=(), frames=None):
        specs.append(
            _Spec(cat, s0, lat, speed, yaw, frames or (first, last), tuple(attrs), rng.uniform(0.92, 1.08))
        )

    ahead = ego_speed * KEYFRAME_DT * n_frames
    for _ in range(rng.integers(5, 9)):  # parked cars on both sides
        side = rng.choice([-1.0, 1.0])
        add(
            "vehicle.car",
            rng.uniform(-30, 45 + ahead),
            side * rng.uniform(5.2, 6.0),
            0,
            rng.normal(0, 0.05),
            ["vehicle.parked"],
        )
    for _ in range(rng.integers(2, 4)):  # oncoming traffic
        v = -rng.uniform(5, 11)
        add(
            rng.choice(["vehicle.car", "vehicle.truck", "vehicle.car"]),
            rng.uniform(10, 60),
            3.5,
            v,
            np.pi,
            ["vehicle.moving"],
        )
    for s0 in (rng.uniform(14, 24), -rng.uniform(14, 24)):  # same lane, ahead and behind
        add(
            "vehicle.car",
            s0,
            0.0,
            ego_speed * rng.uniform(0.95, 1.05),
            0.0,
            ["vehicle.moving" if ego_speed > 0.5 else "vehicle.stopped"],
        )
    big = rng.choice(["vehicle.bus.rigid", "vehicle.trailer", "vehicle.construction"])
    add(big, rng.uniform(25, 40), -3.6, 0.0, 0.0, ["vehicle.stopped"])
    for _ in range(2):  # cyclists at the road edge
        cat = rng.choice(["vehicle.bicycle", "vehicle.motorcycle"])
        add(cat, rng.uniform(-10, 30), -4.6, rng.uniform(2, 5), 0.0, ["cycle.with_rider"])
    add("vehicle.bicycle", rng.uniform(0, 25), 7.5, 0.0, np.pi / 2, ["cycle.without_rider"])
    for _ in range(rng.integers(3, 7)):  # pedestrians on the sidewalks
        side = rng.choice([-1.0, 1.0])
        v = rng.choice([0.0, 1.3, -1.2])
        cat = rng.choice(["human.pedestrian.adult", "human.pedestrian.adult", "human.pedestrian.child"])
        add(
            cat,
            rng.uniform(-15, 35),
            side * rng.uniform(7.5, 9.5),
            v,
            0.0,
            ["pedestrian.moving" if v else "pedestrian.standing"],
        )
    for i in range(rng.integers(3, 5)):  # a line of cones and barriers
        add("movable_object.trafficcone", 18 + 2.5 * i, -2.2, 0.0, 0.0)
    for i in range(2):
        add("movable_object.barrier", rng.uniform(30, 40) + 3 * i, 5.0, 0.0, np.pi / 2)
    for cat in ("animal", "movable_object.debris", "static_object.bicycle_rack", "vehicle.emergency.police"):
        add(cat, rng.uniform(5, 40), rng.choice([-1, 1]) * rng.uniform(4.5, 9), 0.0, rng.uniform(-0.3, 0.3))
    # Outside the 51.2 m BEV range (ahead and to the side); still annotated.
    add("vehicle.truck", ahead + rng.uniform(58, 70), 0.0, 0.0, 0.0, ["vehicle.stopped"])
    add("vehicle.car", rng.uniform(0, 20), 55 + rng.uniform(0, 6), 0.0, np.pi / 2, ["vehicle.parked"])
    # Short-lived: a single annotation (no velocity estimate) and a late entry.
    mid = (first + last) // 2
    add("human.pedestrian.adult", rng.uniform(5, 20), -7.8, 0.0, 0.0, ["pedestrian.standing"], (mid, mid))
    add("vehicle.car", rng.uniform(20, 35), 5.6, 0.0, 0.0, ["vehicle.parked"], (min(mid + 1, last), last))
    return [s for s in specs if s.frames[0] <= s.frames[1]]


def _spec_box(spec: _Spec, path: Path, t: float, rng_yaw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w, length, h = (np.array(SIZES[spec.category]) * spec.scale).tolist()
    xy, heading = path.point(spec.s0 + spec.speed * t, spec.lateral)
    yaw = heading + spec.yaw_offset + rng_yaw
    return np.array([xy[0], xy[1], h / 2]), np.array([w, length, h]), g.quat_from_ypr(float(yaw))


def _degenerate(ann: Ann, frame: Frame, calibs: dict[str, Calib]) -> bool:
    """True if the box would hit the converter's unsupported point/segment hull case in some camera."""
    for cam in CAMERAS:
        cam2global = frame.cam_poses[cam].matrix @ calibs[cam].matrix
        corners = g.apply(g.rigid_inverse(cam2global), ann.corners)
        if g.canvas_box(corners, calibs[cam].intrinsic)[1]:
            return True
    return False


def _overlaps(a: Ann, others: list[Ann]) -> bool:
    ra = 0.5 * np.hypot(a.size[0], a.size[1])
    for b in others:
        rb = 0.5 * np.hypot(b.size[0], b.size[1])
        if np.linalg.norm(a.translation[:2] - b.translation[:2]) < 0.8 * (ra + rb):
            return True
    return False


def build_scene(index: int, name: str, split: str, samples: int, seed: int) -> Scene:
    """Generate one scene with `samples` key frames."""
    rng = np.random.default_rng([seed, index])
    calibs = _calibrations(rng)
    path = Path(
        origin=rng.uniform(300, 1500, 2),
        heading0=float(rng.uniform(-np.pi, np.pi)),
        curvature=float(rng.choice([-1, 1]) * rng.uniform(0.002, 0.012)),
    )
    ego_speed = 0.0 if index % 4 == 1 else float(rng.uniform(3.0, 8.0))
    start = T0_US + index * SCENE_GAP_US + int(rng.integers(0, 1_000_000))
    frames = []
    for k in range(samples):
        ts = start + int(round(k * KEYFRAME_DT * 1e6)) + int(rng.integers(-3000, 3000))
        t = (ts - start) / 1e6
        cams = {
            c: _ego_pose(path, ego_speed, t + CAM_OFFSETS_US[c] / 1e6, ts + CAM_OFFSETS_US[c])
            for c in CAMERAS
        }
        frames.append(Frame(ts, _ego_pose(path, ego_speed, t, ts), cams))

    # Every third scene starts with an empty key frame (no annotation at all).
    specs = _object_specs(rng, samples, ego_speed, empty_first=(index % 3 == 2 and samples > 1))
    instances: list[Instance] = []
    for spec in specs:
        wobble = rng.normal(0, 0.02, samples)
        anns = {}
        for k in range(spec.frames[0], spec.frames[1] + 1):
            t = (frames[k].timestamp - start) / 1e6
            centre, size, rot = _spec_box(spec, path, t, wobble[k])
            anns[k] = Ann(len(instances), centre, size, rot, list(spec.attributes))
        ok = all(
            not _degenerate(a, frames[k], calibs) and not _overlaps(a, frames[k].anns)
            for k, a in anns.items()
        )
        if not ok:
            continue
        for k, a in anns.items():
            frames[k].anns.append(a)
        instances.append(Instance(spec.category, spec.frames))

    for frame in frames:
        _lidar_counts(frame, calibs, rng)
    logfile = f"n{15 - index % 5:03d}-2018-07-{18 + index:02d}-11-{10 + index:02d}-{20 + index:02d}+0800"
    return Scene(
        index,
        name,
        split,
        LOCATIONS[index % len(LOCATIONS)],
        logfile,
        f"2018-07-{18 + index:02d}",
        calibs,
        path,
        ego_speed,
        frames,
        instances,
    )


def _lidar_counts(frame: Frame, calibs: dict[str, Calib], rng: np.random.Generator) -> None:
    """Plausible lidar/radar hit counts: dense near, none beyond ~60 m for small objects."""
    lidar2global = frame.lidar_pose.matrix @ calibs[LIDAR].matrix
    centre = lidar2global[:3, 3]
    for a in frame.anns:
        d = float(np.linalg.norm(a.translation[:2] - centre[:2]))
        w, length, h = a.size
        area = max(w, length) * h
        n = int(900.0 * area / max(d, 2.0) ** 2 * rng.uniform(0.6, 1.2))
        a.num_lidar_pts = 0 if d > 60 else min(n, 2500)
        a.num_radar_pts = int(rng.integers(1, 6)) if (w > 1.5 and d < 70 and rng.random() < 0.6) else 0


def detection_name(category: str) -> str | None:
    """The detection class of a raw category, or None for classes outside the 10."""
    return NAME_MAPPING.get(category)
