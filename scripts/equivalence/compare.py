"""Compare a DALI batch with the original collated batch: structure first, then every field with
the tolerances of docs/tolerances.md (:data:`TOLERANCES`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

GEOMETRY = ("lidar2img", "intrinsics", "extrinsics", "ego_pose", "ego_pose_inv", "timestamp", "img_timestamp")
BOXES_2D = ("gt_bboxes", "centers2d", "depths")
# max abs diff per field kind (float64 compare of the float32 / float64 values)
TOLERANCES = {"geometry": 1e-4, "boxes3d": 1e-5, "boxes2d": 1e-3, "exact": 0.0}
IMAGE_MEAN_TOL, IMAGE_P999_TOL = 0.5, 4.0  # grey levels (uint8 units), per image
# the diff histogram for the aggregate 99.9th percentile: 1/64 grey level bins up to 256
_HIST_EDGES = np.linspace(0.0, 256.0, 256 * 64 + 1)


def kind_of(name: str) -> str:
    """Field name (top-level key, or ``img_metas.<key>`` for the DCs inside the metas) -> tolerance kind."""
    base = name.split(".")[-1]
    if base == "img":
        return "image"
    if base in GEOMETRY:
        return "geometry"
    if base == "gt_bboxes_3d":
        return "boxes3d"
    if base in BOXES_2D:
        return "boxes2d"
    return "exact"


def _is_dc(x: Any) -> bool:
    return type(x).__name__ == "DataContainer"


def _is_boxes(x: Any) -> bool:
    return hasattr(x, "tensor") and hasattr(x, "box_dim")


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor | np.ndarray):
        return f"{type(x).__name__}{tuple(x.shape)} {x.dtype}"
    return type(x).__name__


def walk(a: Any, b: Any, path: str, problems: list[str]) -> Iterator[tuple[str, Any, Any]]:
    """Yield ``(path, dali_tensor, original_tensor)`` numeric leaves with equal dtype and shape; append
    every structural difference (types, DataContainer flags, keys and their order, lengths, dtypes,
    shapes, non-numeric values such as ``img_metas`` entries) to ``problems``."""
    if type(a) is not type(b):
        problems.append(f"{path}: type {_describe(a)} (DALI) vs {_describe(b)} (original)")
        return
    if _is_dc(a):
        for flag in ("stack", "cpu_only", "pad_dims", "padding_value"):
            if getattr(a, flag) != getattr(b, flag):
                problems.append(f"{path}: DataContainer.{flag} {getattr(a, flag)} vs {getattr(b, flag)}")
        yield from walk(a.data, b.data, path, problems)
    elif isinstance(a, dict):
        if list(a) != list(b):
            problems.append(f"{path}: keys {list(a)} vs {list(b)}")
        for key in a:
            if key in b:
                yield from walk(a[key], b[key], f"{path}.{key}" if path else key, problems)
    elif isinstance(a, list | tuple):
        if len(a) != len(b):
            problems.append(f"{path}: length {len(a)} vs {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from walk(x, y, f"{path}[{i}]", problems)
    elif _is_boxes(a):
        for attr in ("box_dim", "with_yaw"):
            if getattr(a, attr) != getattr(b, attr):
                problems.append(f"{path}: {attr} {getattr(a, attr)} vs {getattr(b, attr)}")
        yield from walk(a.tensor, b.tensor, path, problems)
    elif isinstance(a, torch.Tensor | np.ndarray):
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            problems.append(f"{path}: {_describe(a)} vs {_describe(b)}")
        elif isinstance(a, torch.Tensor):
            yield path, a, b
        elif not np.array_equal(a, b):  # arrays inside img_metas (img_norm_cfg): exact
            problems.append(f"{path}: {a!r} vs {b!r}")
    elif a != b:
        problems.append(f"{path}: {a!r} vs {b!r}")


def field_name(path: str) -> str:
    """``gt_bboxes[0][1][0][3]`` -> ``gt_bboxes``; ``img_metas[0][1][0].gt_bboxes_3d`` ->
    ``img_metas.gt_bboxes_3d``."""
    top = path.split("[")[0].split(".")[0]
    if top == "img_metas":
        return f"img_metas.{path.rsplit('.', 1)[-1]}"
    return top


def _f64(x: Any) -> np.ndarray:
    return (x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)).astype(np.float64)


@dataclass
class FieldStats:
    """Running max / mean abs diff of one field over all batches, plus element and tensor counts."""

    name: str
    kind: str
    max_abs: float = 0.0
    sum_abs: float = 0.0
    elements: int = 0
    tensors: int = 0

    def update(self, a: Any, b: Any) -> None:
        d = np.abs(_f64(a) - _f64(b))
        self.tensors += 1
        self.elements += d.size
        if d.size:
            self.max_abs = max(self.max_abs, float(d.max()))
            self.sum_abs += float(d.sum())

    @property
    def tolerance(self) -> float:
        return TOLERANCES[self.kind]

    def ok(self) -> bool:
        return self.max_abs <= self.tolerance

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "max_abs": self.max_abs,
            "mean_abs": self.sum_abs / self.elements if self.elements else 0.0,
            "elements": self.elements,
            "tensors": self.tensors,
            "tolerance": {"max_abs": self.tolerance},
            "ok": self.ok(),
        }


@dataclass
class ImageStats:
    """Pixel differences in grey levels (uint8 units, i.e. normalised values times std), per camera
    image and over all of them; the tolerances hold per image."""

    std: np.ndarray
    name: str = "img"
    kind: str = "image"
    images: int = 0
    pixels: int = 0
    sum_abs: float = 0.0
    sum_sq: float = 0.0
    max_abs: float = 0.0
    worst_mean: float = 0.0
    worst_p999: float = 0.0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(len(_HIST_EDGES) - 1, dtype=np.int64))

    def update(self, a: torch.Tensor, b: torch.Tensor) -> None:
        """``a``, ``b``: (..., 3, H, W) normalised images."""
        scale = torch.as_tensor(self.std, dtype=torch.float32).view(3, 1, 1)
        d = ((a.float() - b.float()).abs() * scale).reshape(-1, 3, *a.shape[-2:]).numpy()
        for img in d:
            flat = img.ravel()
            self.images += 1
            self.pixels += flat.size
            self.sum_abs += float(flat.sum(dtype=np.float64))
            self.sum_sq += float(np.square(flat, dtype=np.float64).sum())
            self.max_abs = max(self.max_abs, float(flat.max()))
            self.worst_mean = max(self.worst_mean, float(flat.mean(dtype=np.float64)))
            self.worst_p999 = max(self.worst_p999, float(np.percentile(flat, 99.9)))
            self.hist += np.histogram(np.minimum(flat, 255.99), _HIST_EDGES)[0]

    def ok(self) -> bool:
        return self.worst_mean <= IMAGE_MEAN_TOL and self.worst_p999 <= IMAGE_P999_TOL

    def summary(self) -> dict[str, Any]:
        mse = self.sum_sq / self.pixels if self.pixels else 0.0
        cum = np.cumsum(self.hist)
        p999 = float(_HIST_EDGES[1:][np.searchsorted(cum, 0.999 * cum[-1])]) if self.pixels else 0.0
        return {
            "kind": "image",
            "max_abs": self.max_abs,
            "mean_abs": self.sum_abs / self.pixels if self.pixels else 0.0,
            "p99_9": p999,
            "psnr_db": float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse),
            "worst_image_mean_abs": self.worst_mean,
            "worst_image_p99_9": self.worst_p999,
            "images": self.images,
            "tolerance": {"mean_abs": IMAGE_MEAN_TOL, "p99_9": IMAGE_P999_TOL, "per": "image"},
            "ok": self.ok(),
        }


def count_objects(collated: dict[str, Any]) -> dict[str, int]:
    """Total 3D boxes and 2D boxes (after the occlusion filter) in a collated batch."""
    boxes3d = sum(len(b.tensor) for frames in collated["gt_bboxes_3d"].data[0] for b in frames)
    boxes2d = sum(len(t) for frames in collated["gt_bboxes"].data[0] for cams in frames for t in cams)
    return {"boxes3d": int(boxes3d), "boxes2d": int(boxes2d)}


class BatchComparator:
    """Accumulates the comparison of many batch pairs."""

    def __init__(self, std: tuple[float, float, float]) -> None:
        self.fields: dict[str, FieldStats | ImageStats] = {
            "img": ImageStats(np.asarray(std, dtype=np.float32))
        }
        self.structure: list[str] = []
        self.counts = {"dali": {"boxes3d": 0, "boxes2d": 0}, "original": {"boxes3d": 0, "boxes2d": 0}}

    def compare(self, dali: Any, original: Any, label: str) -> None:
        """Every field of one pair into its statistics, every structural difference into ``structure``."""
        problems: list[str] = []
        for path, a, b in walk(dali, original, "", problems):
            name = field_name(path)
            self.fields.setdefault(name, FieldStats(name, kind_of(name))).update(a, b)
        self.structure.extend(f"{label}: {p}" for p in problems)

    def add(self, dali: dict[str, Any], original: dict[str, Any], label: str) -> None:
        """:meth:`compare`, and the boxes of both sides counted."""
        self.compare(dali, original, label)
        for side, batch in (("dali", dali), ("original", original)):
            for key, n in count_objects(batch).items():
                self.counts[side][key] += n

    def ok(self) -> bool:
        return not self.structure and all(s.ok() for s in self.fields.values())

    def summary(self) -> dict[str, Any]:
        return {
            "fields": {name: s.summary() for name, s in self.fields.items()},
            "structure_diffs": self.structure,
            "counts": self.counts,
            "ok": self.ok(),
        }
