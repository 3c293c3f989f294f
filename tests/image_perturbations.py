"""Wrong images a loader bug could produce, made from a right batch: each applied in grey levels to
a normalised ``(..., cameras, 3, H, W)`` image tensor. The comparator tests show that every one of
them fails the image comparison (scripts/equivalence/compare.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F


def _resize_one_step(px: torch.Tensor) -> torch.Tensor:
    """Resized one pixel wider (and as much taller) than drawn, then cropped as before: a resize
    size off by one step, the image content 1/W larger."""
    h, w = px.shape[-2:]
    flat = px.reshape(-1, 3, h, w)
    grown = F.interpolate(flat, size=(round(h * (w + 1) / w), w + 1), mode="bilinear", align_corners=False)
    return grown[..., :h, :w].reshape(px.shape)


def _black_camera(px: torch.Tensor) -> torch.Tensor:
    out = px.clone()
    out[..., 0, :, :, :] = 0.0
    return out


PERTURBATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "shift-1px": lambda px: torch.roll(px, 1, dims=-1),
    "horizontal-flip": lambda px: px.flip(-1),
    "swapped-channels": lambda px: px.flip(-3),
    "resize-one-step-off": _resize_one_step,
    "black-camera": _black_camera,
}


def perturbed(img: torch.Tensor, mean: Sequence[float], std: Sequence[float], name: str) -> torch.Tensor:
    """``img`` (normalised with ``mean``/``std``) with the perturbation ``name``, normalised again."""
    m = torch.as_tensor(mean, dtype=torch.float32).view(3, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32).view(3, 1, 1)
    return ((PERTURBATIONS[name](img.float() * s + m) - m) / s).to(img.dtype)
