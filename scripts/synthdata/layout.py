"""One synthetic scene: its rig, road, ego trajectory and traffic drawn, the boxes kept that the
converter can project, the lidar hit counts.

Everything is drawn from one `numpy.random.Generator` per scene, seeded from (seed, scene index), so a
scene does not depend on how many scenes are generated.
"""

from __future__ import annotations

import numpy as np

from . import geometry as g
from .catalog import CAMERAS, LIDAR, LOCATIONS
from .rig import CAM_OFFSETS_US, calibrations, ego_pose
from .traffic import object_specs, spec_box
from .world import KEYFRAME_DT, Ann, Calib, Frame, Instance, Path, Scene

SCENE_GAP_US = 3_600_000_000  # scenes start one hour apart: disjoint, increasing time ranges
T0_US = 1_531_881_600_000_000  # 2018-07-18 04:00 UTC


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
    calibs = calibrations(rng)
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
            c: ego_pose(path, ego_speed, t + CAM_OFFSETS_US[c] / 1e6, ts + CAM_OFFSETS_US[c]) for c in CAMERAS
        }
        frames.append(Frame(ts, ego_pose(path, ego_speed, t, ts), cams))

    # Every third scene starts with an empty key frame (no annotation at all).
    specs = object_specs(rng, samples, ego_speed, empty_first=(index % 3 == 2 and samples > 1))
    instances: list[Instance] = []
    for spec in specs:
        wobble = rng.normal(0, 0.02, samples)
        anns = {}
        for k in range(spec.frames[0], spec.frames[1] + 1):
            t = (frames[k].timestamp - start) / 1e6
            centre, size, rot = spec_box(spec, path, t, wobble[k])
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
