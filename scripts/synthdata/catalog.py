"""Static nuScenes vocabularies: sensors, categories, attributes, visibilities, split scene names."""

from __future__ import annotations

CAMERAS = ("CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT", "CAM_BACK_RIGHT")
LIDAR = "LIDAR_TOP"

# Official v1.0-mini split (nuscenes.utils.splits), interleaved so that small sets contain a val scene.
MINI_SCENES = (
    ("scene-0061", "train"),
    ("scene-0103", "val"),
    ("scene-0553", "train"),
    ("scene-0655", "train"),
    ("scene-0757", "train"),
    ("scene-0916", "val"),
    ("scene-0796", "train"),
    ("scene-1077", "train"),
    ("scene-1094", "train"),
    ("scene-1100", "train"),
)

LOCATIONS = ("singapore-onenorth", "boston-seaport", "singapore-queenstown", "singapore-hollandvillage")

# All 23 nuScenes v1.0 categories.
CATEGORIES = (
    "human.pedestrian.adult",
    "human.pedestrian.child",
    "human.pedestrian.wheelchair",
    "human.pedestrian.stroller",
    "human.pedestrian.personal_mobility",
    "human.pedestrian.police_officer",
    "human.pedestrian.construction_worker",
    "animal",
    "vehicle.car",
    "vehicle.motorcycle",
    "vehicle.bicycle",
    "vehicle.bus.bendy",
    "vehicle.bus.rigid",
    "vehicle.truck",
    "vehicle.construction",
    "vehicle.emergency.ambulance",
    "vehicle.emergency.police",
    "vehicle.trailer",
    "movable_object.barrier",
    "movable_object.trafficcone",
    "movable_object.pushable_pullable",
    "movable_object.debris",
    "static_object.bicycle_rack",
)

ATTRIBUTES = (
    "vehicle.moving",
    "vehicle.stopped",
    "vehicle.parked",
    "cycle.with_rider",
    "cycle.without_rider",
    "pedestrian.sitting_lying_down",
    "pedestrian.standing",
    "pedestrian.moving",
)

VISIBILITIES = (("1", "v0-40"), ("2", "v40-60"), ("3", "v60-80"), ("4", "v80-100"))

# mmdet3d NuScenesDataset.NameMapping: raw category -> detection class (others are "unknown").
NAME_MAPPING = {
    "movable_object.barrier": "barrier",
    "vehicle.bicycle": "bicycle",
    "vehicle.bus.bendy": "bus",
    "vehicle.bus.rigid": "bus",
    "vehicle.car": "car",
    "vehicle.construction": "construction_vehicle",
    "vehicle.motorcycle": "motorcycle",
    "human.pedestrian.adult": "pedestrian",
    "human.pedestrian.child": "pedestrian",
    "human.pedestrian.construction_worker": "pedestrian",
    "human.pedestrian.police_officer": "pedestrian",
    "movable_object.trafficcone": "traffic_cone",
    "vehicle.trailer": "trailer",
    "vehicle.truck": "truck",
}

# StreamPETR converter's 2D label order (labels2d index into this).
NUS_CATEGORIES = (
    "car",
    "truck",
    "trailer",
    "bus",
    "construction_vehicle",
    "bicycle",
    "motorcycle",
    "pedestrian",
    "traffic_cone",
    "barrier",
)

# Nominal box sizes (w, l, h) in metres and an RGB colour per category used for rendering.
_LOOKS = """
vehicle.car                       1.95 4.6  1.7   170  40  40
vehicle.truck                     2.5  7.0  3.0    40  90 170
vehicle.bus.rigid                 2.9  11.0 3.4   220 170  30
vehicle.trailer                   2.9  12.0 3.8   120 120 135
vehicle.construction              2.8  6.5  3.2   235 140  20
vehicle.bicycle                   0.6  1.7  1.3    30 160  60
vehicle.motorcycle                0.8  2.1  1.5   140  40 160
human.pedestrian.adult            0.67 0.72 1.77  230  90 150
human.pedestrian.child            0.5  0.5  1.3   250 130 190
movable_object.trafficcone        0.41 0.41 1.0   250 110   0
movable_object.barrier            2.5  0.5  1.0   225 225 215
animal                            0.4  0.8  0.6   120  80  40
movable_object.debris             0.8  0.8  0.4    90  70  60
static_object.bicycle_rack        6.0  1.5  1.1   160 160 170
vehicle.emergency.police          2.0  5.0  1.8    30  30  60
movable_object.pushable_pullable  0.6  0.7  1.0    60 140 140
"""
_ROWS = [line.split() for line in _LOOKS.strip().splitlines()]
SIZES = {row[0]: tuple(map(float, row[1:4])) for row in _ROWS}
COLOURS = {row[0]: tuple(map(int, row[4:])) for row in _ROWS}
