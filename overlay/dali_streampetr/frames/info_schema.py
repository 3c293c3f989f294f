"""The shape of a StreamPETR info pickle, checked field by field before any frame is built.

Every problem is reported as ``infos[i] (token ...).key: expected ..., got ...``; missing keys are
grouped (first occurrence), malformed values listed (the first :data:`MAX_LISTED`).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .frame_errors import InfoSchemaError

SAMPLE_KEYS = (
    "token",
    "sweeps",
    "scene_token",
    "timestamp",
    "ego2global_rotation",
    "ego2global_translation",
    "lidar2ego_rotation",
    "lidar2ego_translation",
    "cams",
    "gt_boxes",
    "gt_names",
    "gt_velocity",
    "valid_flag",
    "bboxes2d",
    "labels2d",
    "centers2d",
    "depths",
)
CAM_KEYS = ("timestamp", "data_path", "sensor2lidar_rotation", "sensor2lidar_translation", "cam_intrinsic")
PER_CAM_2D = {"bboxes2d": 4, "centers2d": 2, "labels2d": 0, "depths": 0}  # key -> columns (0: 1-D)
MAX_LISTED = 20


def describe(value: Any) -> str:
    """Short description of a value for an error message."""
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} {value.dtype}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _array(value: Any, kind: str) -> np.ndarray | None:
    """``value`` as an array of ``kind`` ('f' numbers, 'i' integers, 'b' booleans), else None."""
    if isinstance(value, str | bytes | dict) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if arr.size == 0:
        return arr
    ok = {"f": "biuf", "i": "iu", "b": "b"}[kind]
    if arr.dtype.kind not in ok or (kind == "f" and arr.dtype.kind == "b"):
        return None
    return arr


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)


def _matrix(shapes: tuple[tuple[int, ...], ...], finite: bool = True) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        arr = _array(value, "f")
        return (
            arr is not None
            and arr.shape in shapes
            and (not finite or bool(np.isfinite(arr.astype(np.float64)).all()))
        )

    return check


SAMPLE_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "token": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "scene_token": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "timestamp": ("a number (microseconds)", _is_number),
    "sweeps": ("a list", lambda v: isinstance(v, list | tuple)),
    "ego2global_rotation": ("a (w, x, y, z) quaternion: 4 finite numbers", _matrix(((4,),))),
    "lidar2ego_rotation": ("a (w, x, y, z) quaternion: 4 finite numbers", _matrix(((4,),))),
    "ego2global_translation": ("3 finite numbers", _matrix(((3,),))),
    "lidar2ego_translation": ("3 finite numbers", _matrix(((3,),))),
}
CAM_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "timestamp": ("a number (microseconds)", _is_number),
    "data_path": ("a non-empty path string", lambda v: isinstance(v, str | os.PathLike) and bool(str(v))),
    "sensor2lidar_rotation": ("a 3x3 rotation matrix", _matrix(((3, 3),))),
    "sensor2lidar_translation": ("3 finite numbers", _matrix(((3,),))),
    "cam_intrinsic": ("a 3x3 (or 3x4, 4x4) intrinsic matrix", _matrix(((3, 3), (3, 4), (4, 4)))),
}


def _box_problems(info: dict) -> list[tuple[str, str, Any]]:
    """gt_boxes (n, 7), gt_names (n,), gt_velocity (n, 2), valid_flag (n,) booleans."""
    out = []
    boxes = _array(info["gt_boxes"], "f")
    if boxes is None or (boxes.size and (boxes.ndim != 2 or boxes.shape[1] != 7)):
        return [("gt_boxes", "an (n, 7) array of numbers: x, y, z, dx, dy, dz, yaw", info["gt_boxes"])]
    n = len(boxes) if boxes.size else 0
    if boxes.size and not np.isfinite(boxes.astype(np.float64)).all():
        out.append(("gt_boxes", "finite numbers", info["gt_boxes"]))
    names = info["gt_names"]
    if isinstance(names, str) or np.asarray(names).shape != (n,):
        out.append(("gt_names", f"{n} class names (one per gt_boxes row)", names))
    velocity = _array(info["gt_velocity"], "f")
    if velocity is None or (velocity.size != 2 * n) or (n and velocity.shape != (n, 2)):
        out.append(("gt_velocity", f"an ({n}, 2) array of numbers (NaN allowed)", info["gt_velocity"]))
    valid = _array(info["valid_flag"], "b")
    if valid is None or valid.size != n or (n and valid.shape != (n,)):
        out.append(("valid_flag", f"{n} booleans (one per gt_boxes row)", info["valid_flag"]))
    return out


def _annotation_2d_problems(info: dict, n_cams: int) -> list[tuple[str, str, Any]]:
    """bboxes2d/centers2d (k, 4)/(k, 2), labels2d/depths (k,): one entry per camera, same k."""
    out = []
    for key in PER_CAM_2D:
        if not isinstance(info[key], list | tuple) or len(info[key]) != n_cams:
            out.append((key, f"a list with one entry per camera ({n_cams})", info[key]))
    if out:
        return out
    for cam in range(n_cams):
        counts = {}
        for key, cols in PER_CAM_2D.items():
            value = info[key][cam]
            arr = _array(value, "i" if key == "labels2d" else "f")
            good = arr is not None and (
                arr.size == 0 or (arr.ndim == 2 and arr.shape[1] == cols if cols else arr.ndim == 1)
            )
            if not good:
                shape = f"(k, {cols})" if cols else "(k,)"
                kind = "integers" if key == "labels2d" else "numbers"
                out.append((f"{key}[{cam}]", f"a {shape} array of {kind}", value))
            else:
                counts[key] = len(arr) if arr.size else 0
        if len(set(counts.values())) > 1:
            out.append((f"bboxes2d/centers2d/labels2d/depths[{cam}]", "the same number of rows", counts))
    return out


def info_problems(i: int, info: Any) -> tuple[list[str], list[str]]:
    """(missing keys, malformed-field messages) of ``infos[i]``."""
    if not isinstance(info, dict):
        return [], [f"infos[{i}]: expected a dict, got {describe(info)}"]
    missing = [key for key in SAMPLE_KEYS if key not in info]
    bad: list[tuple[str, str, Any]] = []
    for key, (what, ok) in SAMPLE_CHECKS.items():
        if key in info and not ok(info[key]):
            bad.append((key, what, info[key]))
    cams = info.get("cams")
    if "cams" in info and (not isinstance(cams, dict) or not cams):
        bad.append(("cams", "a non-empty dict camera name -> camera record", cams))
    elif isinstance(cams, dict):
        for cam, record in cams.items():
            if not isinstance(record, dict):
                bad.append((f"cams.{cam}", "a dict", record))
                continue
            missing += [f"cams.{cam}.{key}" for key in CAM_KEYS if key not in record]
            for key, (what, ok) in CAM_CHECKS.items():
                if key in record and not ok(record[key]):
                    bad.append((f"cams.{cam}.{key}", what, record[key]))
        if all(k in info for k in PER_CAM_2D):
            bad += _annotation_2d_problems(info, len(cams))
    if all(k in info for k in ("gt_boxes", "gt_names", "gt_velocity", "valid_flag")):
        bad += _box_problems(info)
    token = info.get("token")
    where = f"infos[{i}]" + (f" (token {token})" if isinstance(token, str) else "")
    return missing, [f"{where}.{key}: expected {what}, got {describe(value)}" for key, what, value in bad]


def validate_infos(data: object) -> list[dict]:
    """Check the pickle's shape; raise one :class:`InfoSchemaError` listing every problem."""
    if not isinstance(data, dict) or not isinstance(data.get("infos"), list):
        raise InfoSchemaError(
            "info pickle must be a dict with an 'infos' list (StreamPETR's converter output)"
        )
    infos = data["infos"]
    if not infos:
        raise InfoSchemaError("info pickle has an empty 'infos' list")
    first_missing: dict[str, int] = {}
    malformed: list[str] = []
    for i, info in enumerate(infos):
        missing, bad = info_problems(i, info)
        for key in missing:
            first_missing.setdefault(key, i)
        malformed += bad
    parts = []
    if first_missing:
        listed = ", ".join(f"{k} (first at infos[{i}])" for k, i in first_missing.items())
        parts.append(f"missing keys needed for training: {listed}")
    if malformed:
        more = f"\n  ... and {len(malformed) - MAX_LISTED} more" if len(malformed) > MAX_LISTED else ""
        parts.append(f"{len(malformed)} malformed field(s):\n  " + "\n  ".join(malformed[:MAX_LISTED]) + more)
    if parts:
        raise InfoSchemaError("info pickle: " + "; ".join(parts))
    n_cams = {len(info["cams"]) for info in infos}
    if len(n_cams) != 1:
        raise InfoSchemaError(f"every frame must have the same number of cameras, found {sorted(n_cams)}")
    return infos
