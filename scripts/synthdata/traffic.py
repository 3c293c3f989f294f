"""The traffic of a synthetic scene: which objects stand or move where, for which key frames, and
their boxes along the road at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import geometry as g
from .catalog import SIZES
from .world import KEYFRAME_DT, Path


@dataclass
class Spec:
    category: str
    s0: float  # arc length at t = 0
    lateral: float
    speed: float  # along the path (negative: driving the other way)
    yaw_offset: float
    frames: tuple[int, int]
    attributes: tuple[str, ...]
    scale: float = 1.0


def object_specs(rng: np.random.Generator, n_frames: int, ego_speed: float, empty_first: bool) -> list[Spec]:
    """Instances of one scene: parked and moving vehicles, cyclists, pedestrians, road furniture, objects of
    classes outside the 10 detection classes, objects outside the 51.2 m range, and short-lived ones."""
    first = 1 if empty_first else 0
    last = n_frames - 1
    specs: list[Spec] = []

    def add(cat, s0, lat, speed=0.0, yaw=0.0, attrs=(), frames=None):
        specs.append(
            Spec(cat, s0, lat, speed, yaw, frames or (first, last), tuple(attrs), rng.uniform(0.92, 1.08))
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


def spec_box(spec: Spec, path: Path, t: float, rng_yaw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w, length, h = (np.array(SIZES[spec.category]) * spec.scale).tolist()
    xy, heading = path.point(spec.s0 + spec.speed * t, spec.lateral)
    yaw = heading + spec.yaw_offset + rng_yaw
    return np.array([xy[0], xy[1], h / 2]), np.array([w, length, h]), g.quat_from_ypr(float(yaw))
