"""Where each camera image is decoded and resampled, and the external source's per-image parameter
row that carries it (with the source size and the image's geometry) to the DALI graph."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..sampling.augment import AugDraw
from .wire import GEOMETRY_WIDTH

# The external source's per-image parameter row (float64 holds every int32 and float32 value
# exactly): where to decode and resample, the source image's [H, W, ok], then its geometry row
# (:mod:`.wire`). One row instead of eight small arrays keeps the per-batch hand-over to DALI short.
DECODE_START, DECODE_SHAPE, ROI_START, ROI_END, OUT_SIZE = (slice(i, i + 2) for i in range(0, 10, 2))
FLIP, INFO, GEOMETRY = 10, slice(11, 14), slice(14, 14 + GEOMETRY_WIDTH)
ROW_WIDTH = 14 + GEOMETRY_WIDTH


@dataclass(frozen=True)
class ImageParams:
    """Where one camera image is decoded and resampled (all in source pixels, HW order)."""

    decode_start: tuple[int, int]
    decode_shape: tuple[int, int]
    roi_start: tuple[float, float]  # relative to the decoded region
    roi_end: tuple[float, float]
    out_size: tuple[float, float]  # resized extent before padding to final_dim
    flip: bool


def image_params(
    draw: AugDraw, height: int, width: int, final_dim: tuple[int, int], roi: bool
) -> ImageParams:
    """PIL's ``resize(resize_dims).crop(crop)`` as a resize of the source window that maps onto the
    crop: output pixel j samples resized pixel ``crop_x + j``, i.e. source ``(crop_x + j + .5) * W/newW``.
    Crop columns/rows beyond the resized image are left for the black padding."""
    new_w, new_h = draw.resize_dims
    crop_w, crop_h, _, _ = draw.crop
    fH, fW = final_dim
    if crop_h < 0 or crop_w < 0:
        raise ValueError(f"crop {draw.crop} starts outside the resized image {draw.resize_dims}")
    rows, cols = min(fH, new_h - crop_h), min(fW, new_w - crop_w)
    sy, sx = height / new_h, width / new_w
    y0, y1 = crop_h * sy, (crop_h + rows) * sy
    top, bottom = 0, height
    if roi:  # keep the filter's support (2 output pixels of the cubic kernel) plus one row
        margin = math.ceil(2 * max(1.0, sy)) + 1
        top, bottom = max(0, math.floor(y0) - margin), min(height, math.ceil(y1) + margin)
    return ImageParams(
        decode_start=(top, 0),
        decode_shape=(bottom - top, width),
        roi_start=(y0 - top, crop_w * sx),
        roi_end=(y1 - top, (crop_w + cols) * sx),
        out_size=(float(rows), float(cols)),
        flip=draw.flip,
    )


def param_row(params: ImageParams, size: tuple[int, int], ok: bool, geometry: np.ndarray) -> np.ndarray:
    """One image's parameter row: ``params``, the source ``size`` (H, W), whether it was readable
    (``ok``) and its geometry row (:func:`.wire.geometry_rows`)."""
    row = np.empty(ROW_WIDTH, dtype=np.float64)
    row[DECODE_START], row[DECODE_SHAPE] = params.decode_start, params.decode_shape
    row[ROI_START] = np.array(params.roi_start, dtype=np.float32)
    row[ROI_END] = np.array(params.roi_end, dtype=np.float32)
    row[OUT_SIZE] = np.array(params.out_size, dtype=np.float32)
    row[FLIP], row[INFO], row[GEOMETRY] = params.flip, (*size, ok), geometry
    return row
