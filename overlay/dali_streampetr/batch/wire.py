"""The wire format: what travels through DALI beside each camera image's encoded bytes, written in
the external source (its worker process) and read back on the loader's side. The one place that
knows the layout; the external source, the DALI graph and the batch assembly use its names.

Two things per camera image (the external source is per image, so a sample's own values sit in its
cameras' slots):

- the parameter row: float64 ``(ROW_WIDTH,)`` (exact for every int32 and float32 value, so the round
  trip is bit for bit; one row keeps the hand-over to DALI short). Its fields: where to decode and
  resample (``DECODE_START`` ... ``FLIP``: :class:`.transforms.ImageParams`), ``INFO`` the source
  image's (H, W, ok), then ``GEOMETRY``: the camera's ``lidar2img``, ``intrinsics``,
  ``extrinsics``, the sample's ``ego_pose`` and ``ego_pose_inv`` (16 values each, row-major), the
  camera's ``img_timestamp`` and the sample's ``timestamp``.
- ``annotations``: uint8: the sample's annotations and plan as one pickle record (protocol 4: every
  array comes back as its own writable copy, with its dtype and shape) in its first camera's slot,
  empty in the others. Written by this package's own worker, read back by the same loader.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ..batch_schema import ANNOTATION_KEYS
from .transforms import ImageParams

MATRIX_KEYS = ("lidar2img", "intrinsics", "extrinsics")  # per camera, (N, 4, 4)
POSE_KEYS = ("ego_pose", "ego_pose_inv")  # per sample, (4, 4)
_IMG_TS = 16 * (len(MATRIX_KEYS) + len(POSE_KEYS))
GEOMETRY_WIDTH = _IMG_TS + 2  # + img_timestamp, timestamp
_EMPTY = np.zeros(0, dtype=np.uint8)

# the parameter row's fields (see the module doc)
DECODE_START, DECODE_SHAPE, ROI_START, ROI_END, OUT_SIZE = (slice(i, i + 2) for i in range(0, 10, 2))
DECODE_WINDOW = slice(0, 4)  # DECODE_START then DECODE_SHAPE: (y, x, h, w)
FLIP: int = 10
INFO = slice(11, 14)
GEOMETRY = slice(14, 14 + GEOMETRY_WIDTH)
ROW_WIDTH: int = 14 + GEOMETRY_WIDTH


def geometry_rows(targets: dict[str, Any]) -> np.ndarray:
    """(N, GEOMETRY_WIDTH) float64: one row per camera of one sample (layout in the module doc)."""
    n = len(targets["lidar2img"])
    rows = np.empty((n, GEOMETRY_WIDTH), dtype=np.float64)
    for i, key in enumerate(MATRIX_KEYS):
        rows[:, 16 * i : 16 * (i + 1)] = targets[key].reshape(n, 16)
    for i, key in enumerate(POSE_KEYS, start=len(MATRIX_KEYS)):
        rows[:, 16 * i : 16 * (i + 1)] = targets[key].reshape(1, 16)
    rows[:, _IMG_TS] = targets["img_timestamp"]
    rows[:, _IMG_TS + 1] = targets["timestamp"]
    return rows


def annotation_records(targets: dict[str, Any], n_cams: int, plan: dict[str, Any]) -> list[np.ndarray]:
    """One uint8 array per camera: the sample's record first (its annotations and ``plan``: the
    iteration, frame index, ``prev_exists`` and draw it was made for), then empty arrays."""
    record = pickle.dumps({**plan, **{k: targets[k] for k in ANNOTATION_KEYS}}, protocol=4)
    return [np.frombuffer(record, dtype=np.uint8), *([_EMPTY] * (n_cams - 1))]


def param_row(params: ImageParams, size: tuple[int, int], ok: bool, geometry: np.ndarray) -> np.ndarray:
    """One image's parameter row: ``params``, the source ``size`` (H, W), whether it was readable
    (``ok``) and its geometry row (:func:`geometry_rows`)."""
    row = np.empty(ROW_WIDTH, dtype=np.float64)
    row[DECODE_START], row[DECODE_SHAPE] = params.decode_start, params.decode_shape
    row[ROI_START] = np.array(params.roi_start, dtype=np.float32)
    row[ROI_END] = np.array(params.roi_end, dtype=np.float32)
    row[OUT_SIZE] = np.array(params.out_size, dtype=np.float32)
    row[FLIP], row[INFO], row[GEOMETRY] = params.flip, (*size, ok), geometry
    return row


def read_rows(rows: np.ndarray, frames: int, n_cams: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The (frames * n_cams, ROW_WIDTH) parameter rows of one iteration, read back: int64
    ``(frames, n_cams, 3)`` source height, width and ok per image, and :func:`split_geometry`."""
    if rows.shape != (frames * n_cams, ROW_WIDTH):
        raise ValueError(f"parameter rows {rows.shape}, expected {(frames * n_cams, ROW_WIDTH)}")
    info = rows[:, INFO].astype(np.int64).reshape(frames, n_cams, 3)
    return info, split_geometry(rows[:, GEOMETRY], frames, n_cams)


def split_geometry(rows: np.ndarray, batch: int, n_cams: int) -> dict[str, np.ndarray]:
    """The batch's collect keys from the (B * N, GEOMETRY_WIDTH) rows, as the stacked originals:
    ``(B, 1, N, 4, 4)`` float32 matrices, ``(B, 1, 4, 4)`` float32 poses, ``img_timestamp``
    ``(B, 1, N)`` and ``timestamp`` ``(B, 1)`` float64. Every array is a new contiguous copy."""
    if rows.shape != (batch * n_cams, GEOMETRY_WIDTH):
        raise ValueError(f"geometry rows {rows.shape}, expected {(batch * n_cams, GEOMETRY_WIDTH)}")
    out = {}
    for i, key in enumerate(MATRIX_KEYS):
        out[key] = rows[:, 16 * i : 16 * (i + 1)].astype(np.float32).reshape(batch, 1, n_cams, 4, 4)
    first = rows[::n_cams]  # the per-sample values are repeated in every camera row
    for i, key in enumerate(POSE_KEYS, start=len(MATRIX_KEYS)):
        out[key] = first[:, 16 * i : 16 * (i + 1)].astype(np.float32).reshape(batch, 1, 4, 4)
    out["img_timestamp"] = rows[:, _IMG_TS].reshape(batch, 1, n_cams).copy()
    out["timestamp"] = first[:, _IMG_TS + 1].reshape(batch, 1).copy()
    return out


def read_record(buf: Any) -> dict[str, Any]:
    """The annotation record of one sample (a buffer written by :func:`annotation_records`)."""
    return pickle.loads(memoryview(buf))
