"""Upstream's image path with PIL, an independent reference of the DALI graph's pixels: it shares
no code with the loader."""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

MEAN = np.array([123.675, 116.28, 103.53])
STD = np.array([58.395, 57.12, 57.375])


def upstream_image(path: str, draw: Any, final: tuple[int, int] = (64, 176)) -> np.ndarray:
    """ResizeCropFlipRotImage + NormalizeMultiviewImage(to_rgb) + PadMultiViewImage(32) with PIL, for
    the draw's resize, crop and flip: CHW float64."""
    img = Image.open(path).convert("RGB").resize(draw.resize_dims).crop(draw.crop)
    if draw.flip:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    out = (np.asarray(img, dtype=np.float64) - MEAN) / STD
    pad_w = -final[1] % 32
    return np.pad(out, ((0, -final[0] % 32), (0, pad_w), (0, 0))).transpose(2, 0, 1)
