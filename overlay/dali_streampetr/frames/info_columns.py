"""An info file's frames as frame-store columns, computed field by field over the whole set at once:
:func:`info_columns` gives what :func:`.columns.to_columns` makes of :mod:`.records`' per-frame
records, bit for bit (docs/loader.md, "The frames at nuScenes size"). Any value not of the converter's
types, and every malformed pickle, goes the per-frame way (:func:`.records.sorted_infos` names the
problems)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from .columns import (
    ANN_2D,
    KEEPS_EMPTY_SHAPE,
    REGULAR,
    SHARED,
    StringTable,
    offsets,
    shared_blocks,
    to_columns,
)
from .records import frame_records, sorted_infos

NUMBER = frozenset({int, float})
SHAPE, SIZE, NDIM, KIND = (attrgetter(a) for a in ("shape", "size", "ndim", "dtype.kind"))
KIND_DTYPES = {"U": np.str_, "f": np.float64, "i": np.int64, "b": np.bool_}  # of an empty result
EXACT_INT = 2**53  # integers below this convert to float64 exactly, on every path


class _PerFrame(Exception):
    """A value this path does not take: the per-frame path decides (and names a bad one)."""


def info_columns(
    data: Any, class_names: Sequence[str], ann_file: str | Path = "info pickle"
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(columns, meta) of an unpickled info file, as ``to_columns(frame_records(...))`` makes them."""
    try:
        return _columns(data, class_names)
    except (_PerFrame, KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError):
        return to_columns(frame_records(sorted_infos(data, ann_file), class_names))


def _columns(data: Any, class_names: Sequence[str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    if type(data) is not dict or type(data.get("infos")) is not list or not data["infos"]:
        raise _PerFrame
    raw = data["infos"]
    _only(raw, {dict})
    stamps = _field(raw, "timestamp")
    timestamps = _numbers(stamps)
    order = sorted(range(len(raw)), key=stamps.__getitem__)  # upstream's stable sort by timestamp
    infos = list(map(raw.__getitem__, order))
    n = len(infos)
    cams = _field(infos, "cams")
    _only(cams, {dict})
    n_cams = len(cams[0])
    if not n_cams or set(map(len, cams)) != {n_cams}:
        raise _PerFrame
    records = list(chain.from_iterable(map(dict.values, cams)))
    _only(records, {dict})

    cols: dict[str, np.ndarray] = {}
    cols["timestamp"] = timestamps[order] / 1e6
    sweeps = _field(infos, "sweeps")
    _only(sweeps, {list, tuple})
    cols["has_sweeps"] = np.fromiter(map(len, sweeps), np.int64, n) > 0
    cols["img_timestamps"] = (_numbers(_field(records, "timestamp")) / 1e6).reshape(n, n_cams)
    cols["intrinsics"] = _viewpads(_stack(_field(records, "cam_intrinsic"), None)).reshape(n, n_cams, 4, 4)
    cam2lidar = _rigid(
        _stack(_field(records, "sensor2lidar_rotation"), (3, 3)),
        _stack(_field(records, "sensor2lidar_translation"), (3,)),
    )
    cols["extrinsics"] = _rigid_inverse(cam2lidar).reshape(n, n_cams, 4, 4)
    e2g = _rigid(_rotation(_pose(infos, "ego2global_rotation", 4)), _pose(infos, "ego2global_translation", 3))
    l2e = _rigid(_rotation(_pose(infos, "lidar2ego_rotation", 4)), _pose(infos, "lidar2ego_translation", 3))
    cols["ego_pose"] = np.matmul(e2g, l2e)  # one sgemm per frame, as ``e2g @ l2e``
    cols["ego_pose_inv"] = _rigid_inverse(cols["ego_pose"])
    for name in SHARED:
        cols[name], cols[f"{name}_index"] = shared_blocks(cols[name])

    strings = StringTable()
    for name in ("token", "scene_token"):
        values = _field(infos, name)
        _only(values, {str})
        if not all(values):
            raise _PerFrame
        cols[name] = strings.indices(values)
    cam_names = list(chain.from_iterable(cams))
    paths = _field(records, "data_path")
    _only(cam_names, {str})
    _only(paths, {str})
    if not all(paths):
        raise _PerFrame
    cols["cam_names"] = strings.indices(cam_names).reshape(n, n_cams)
    cols["data_paths"] = strings.indices(paths).reshape(n, n_cams)
    cols["string_values"], cols["string_offsets"] = strings.arrays()

    cols.update(_boxes(infos, class_names))
    ann2d, empty_shapes = _annotations_2d(infos, n_cams)
    cols.update(ann2d)
    return cols, {"n_cams": n_cams, "empty_shapes": [list(s) for s in empty_shapes]}


def _field(dicts: list[dict], key: str) -> list:
    """``[d[key] for d in dicts]`` (a ``KeyError`` when one lacks it)."""
    return list(map(itemgetter(key), dicts))


def _only(values: list, types: set[type]) -> None:
    """Every value of exactly one of ``types`` (subclasses go the per-frame way)."""
    if not set(map(type, values)) <= types:
        raise _PerFrame


def _numbers(values: list) -> np.ndarray:
    """Python ints/floats (finite) as float64: the values ``value / 1e6`` divides."""
    kinds = set(map(type, values))
    if not kinds <= NUMBER:
        raise _PerFrame
    out = np.array(values, dtype=np.float64)
    if not np.isfinite(out).all() or (int in kinds and np.abs(out).max() >= EXACT_INT):
        raise _PerFrame
    return out


def _stack(values: list, shape: tuple[int, ...] | None) -> np.ndarray:
    """Finite float arrays of one ``shape`` (None: any one shape), or lists/tuples of Python
    numbers, as one float64 array ``(len(values), *shape)``."""
    types = set(map(type, values))
    if types == {np.ndarray}:
        shapes = set(map(SHAPE, values))
        if len(shapes) != 1 or (shape is not None and shapes != {shape}) or not (one := shapes.pop()):
            raise _PerFrame
        if set(map(KIND, values)) != {"f"}:
            raise _PerFrame
        out = np.concatenate(values).reshape(len(values), *one).astype(np.float64, copy=False)
    elif types <= {list, tuple}:
        if not set(map(type, chain.from_iterable(values))) <= NUMBER:
            raise _PerFrame
        out = np.array(values, dtype=np.float64)
        if (shape is not None and out.shape[1:] != shape) or out.ndim < 2 or np.abs(out).max() >= EXACT_INT:
            raise _PerFrame
    else:
        raise _PerFrame
    if not np.isfinite(out).all():
        raise _PerFrame
    return out


def _pose(infos: list[dict], key: str, length: int) -> np.ndarray:
    return _stack(_field(infos, key), (length,))


def _rotation(q: np.ndarray) -> np.ndarray:
    """(n, 3, 3) of :func:`.records.quat_to_matrix` for (n, 4) quaternions: the same ``np.dot``s as
    stacked products (``ddot`` for q.q, ``dgemm`` with the right matrix transposed)."""
    qq = np.matmul(q[:, None, :], q[:, :, None])[:, 0, 0]
    norm = np.sqrt(qq)
    rescale = ~(np.abs(1.0 - qq) < 1e-14) & (norm > 0)
    q = np.divide(q, norm[:, None], out=q.copy(), where=rescale[:, None])
    w, x, y, z = q.T
    left = np.stack([w, -x, -y, -z, x, w, -z, y, y, z, w, -x, z, -y, x, w], axis=1).reshape(-1, 4, 4)
    right = np.stack([w, -x, -y, -z, x, w, z, -y, y, -z, w, x, z, y, -x, w], axis=1).reshape(-1, 4, 4)
    return np.matmul(left, right.transpose(0, 2, 1))[:, 1:, 1:]


def _rigid(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """(n, 4, 4) float32 [R | t] of :func:`.records.rigid_matrix`."""
    m = np.zeros((len(rotation), 4, 4), dtype=np.float32)
    m[:, :3, :3] = rotation
    m[:, :3, 3] = translation
    m[:, 3, 3] = 1.0
    return m


def _rigid_inverse(m: np.ndarray) -> np.ndarray:
    """(n, 4, 4) of :func:`.records.rigid_inverse`: ``np.dot`` copies the transposed rotation into a
    C-ordered array and calls ``sgemv`` with the translation's stride; so does this, per frame."""
    rt = np.ascontiguousarray(m[:, :3, :3].transpose(0, 2, 1))
    inv = np.zeros_like(m)
    inv[:, :3, :3] = rt
    inv[:, :3, 3] = -np.matmul(rt, m[:, :3, 3:4])[:, :, 0]
    inv[:, 3, 3] = 1.0
    return inv


def _viewpads(k: np.ndarray) -> np.ndarray:
    """(n, 4, 4) float64 identity with each intrinsic matrix in its top-left corner."""
    if k.shape[1:] not in ((3, 3), (3, 4), (4, 4)):
        raise _PerFrame
    pads = np.zeros((len(k), 4, 4))
    pads[:, range(4), range(4)] = 1.0
    pads[:, : k.shape[1], : k.shape[2]] = k
    return pads


def _rows(
    arrays: list, tail: tuple[int, ...], kind: str, dtype: type | None
) -> tuple[np.ndarray, np.ndarray]:
    """(rows per array, the non-empty arrays concatenated, as ``dtype`` unless None): numpy arrays
    of ``kind`` and shape ``(k, *tail)``, or empty ones of any shape and dtype (0 rows)."""
    if set(map(type, arrays)) != {np.ndarray}:
        raise _PerFrame
    n = len(arrays)
    sizes = np.fromiter(map(SIZE, arrays), np.int64, n)
    counts = np.where(sizes > 0, np.fromiter(map(len, arrays), np.int64, n), 0)
    filled = list(compress(arrays, sizes.tolist()))
    if not filled:
        return counts, np.zeros((0, *tail), dtype or KIND_DTYPES[kind])
    if set(map(KIND, filled)) != {kind}:
        raise _PerFrame
    values = np.concatenate(filled)  # a ValueError when their ndim or columns differ
    if values.shape[1:] != tail:
        raise _PerFrame
    return counts, values if dtype is None else values.astype(dtype, copy=False)


def _boxes(infos: list[dict], class_names: Sequence[str]) -> dict[str, np.ndarray]:
    """The 3D boxes as :func:`.records.frame_records` derives them, concatenated over the frames."""
    count, boxes = _rows(_field(infos, "gt_boxes"), (7,), "f", np.float64)
    if not np.isfinite(boxes).all():
        raise _PerFrame
    velocity_count, velocity = _rows(_field(infos, "gt_velocity"), (2,), "f", np.float64)
    valid_count, mask = _rows(_field(infos, "valid_flag"), (), "b", np.bool_)
    names = _field(infos, "gt_names")
    names_count, all_names = _rows(names, (), "U", None)
    if set(map(NDIM, names)) != {1}:  # (k,), also when empty
        raise _PerFrame
    if (velocity_count != count).any() or (valid_count != count).any() or (names_count != count).any():
        raise _PerFrame
    speed = velocity[mask]
    speed[np.isnan(speed[:, 0])] = 0.0
    gt_boxes = np.concatenate([boxes[mask], speed], axis=1).astype(np.float32)
    gt_boxes[:, 2] -= gt_boxes[:, 5] * 0.5  # nuScenes centre origin (0.5, 0.5, 0.5) -> bottom centre
    kept_per_frame = np.concatenate([[0], np.cumsum(mask)])[offsets(count.tolist())]
    index = {name: i for i, name in enumerate(class_names)}
    labels = np.fromiter((index.get(name, -1) for name in all_names[mask].tolist()), np.int64)
    return {"box_offsets": kept_per_frame, "gt_boxes": gt_boxes, "gt_labels": labels}


def _annotations_2d(infos: list[dict], n_cams: int) -> tuple[dict[str, np.ndarray], list[tuple[int, ...]]]:
    """The per-camera 2D annotations as values + offsets, and the shapes of the empty ones that
    are not (0, cols) (in the order :func:`.columns.to_columns` meets them)."""
    cols: dict[str, np.ndarray] = {}
    counts: list[np.ndarray] = []
    empty_shapes: list[tuple[int, ...]] = []
    for key, (dtype, width) in ANN_2D.items():
        lists = _field(infos, key)
        _only(lists, {list, tuple})
        if set(map(len, lists)) != {n_cams}:
            raise _PerFrame
        per_cam = list(chain.from_iterable(lists))
        if list in set(map(type, per_cam)):  # upstream passes a plain [] through: np.asarray makes it (0,)
            per_cam = [np.zeros(0, dtype) if type(a) is list and not a else a for a in per_cam]
        count, cols[key] = _rows(per_cam, (width,) if width else (), "i" if key == "labels2d" else "f", dtype)
        counts.append(count)
        if key in KEEPS_EMPTY_SHAPE:
            ids = np.full(len(per_cam), REGULAR, dtype=np.int16)
            empty = np.flatnonzero(count == 0).tolist()
            shapes = list(map(SHAPE, map(per_cam.__getitem__, empty)))
            if set(shapes) - {(0, width)}:
                for j, shape in zip(empty, shapes, strict=True):
                    if shape != (0, width):
                        if shape not in empty_shapes:
                            empty_shapes.append(shape)
                        ids[j] = empty_shapes.index(shape)
            cols[f"{key}_shape"] = ids.reshape(len(infos), n_cams)
    if any((c != counts[0]).any() for c in counts[1:]):
        raise _PerFrame  # the same number of rows for every key of a camera
    ordered = {"ann2d_offsets": offsets(counts[0].tolist())}
    for key in ANN_2D:
        ordered[key] = cols[key]
        if key in KEEPS_EMPTY_SHAPE:
            ordered[f"{key}_shape"] = cols[f"{key}_shape"]
    return ordered, empty_shapes
