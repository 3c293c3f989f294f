"""The train pipeline of the config, step by step, against what the loader reproduces.

The loader implements upstream's ten-step training pipeline in this order. Every step must be
there, in order, of a known type, with every parameter either one the loader reads (and then equal
to the value it uses) or at the one value it reproduces; anything else is refused with the step, the
parameter, the value and what is supported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..batch_schema import COLLECT3D_KEYS, COLLECT3D_META_KEYS, GEOMETRY_KEYS
from .settings import GRST_KEYS, IDA_KEYS, LoaderConfig, refuse

STEPS = (
    "LoadMultiViewImageFromFiles",
    "LoadAnnotations3D",
    "ObjectRangeFilter",
    "ObjectNameFilter",
    "ResizeCropFlipRotImage",
    "GlobalRotScaleTransImage",
    "NormalizeMultiviewImage",
    "PadMultiViewImage",
    "PETRFormatBundle3D",
    "Collect3D",
)
_ANN_FIXED = {
    "with_bbox_3d": True,
    "with_label_3d": True,
    "with_attr_label": False,
    "with_mask_3d": False,
    "with_seg_3d": False,
    "with_bbox": True,
    "with_label": True,
    "with_mask": False,
    "with_seg": False,
    "with_bbox_depth": True,
    "poly2mask": True,
    "file_client_args": {"backend": "disk"},
}
# Parameters at the only value the loader reproduces, per step (upstream's defaults where absent).
FIXED: dict[str, dict[str, Any]] = {
    "LoadMultiViewImageFromFiles": {"to_float32": True, "color_type": "unchanged"},
    "LoadAnnotations3D": _ANN_FIXED,
    "ResizeCropFlipRotImage": {"training": True, "with_2d": True, "filter_invisible": True},
    "PadMultiViewImage": {"size": None, "pad_val": 0},
    "PETRFormatBundle3D": {"with_gt": True, "with_label": True},
}
ABSENT_DEFAULTS = {
    ("LoadMultiViewImageFromFiles", "to_float32"): False,
    ("LoadAnnotations3D", "with_bbox"): False,
    ("LoadAnnotations3D", "with_label"): False,
    ("LoadAnnotations3D", "with_bbox_depth"): False,
}
# Parameters the loader reads: each equal to its value in :func:`expected_values`.
READ: dict[str, tuple[str, ...]] = {
    "ObjectRangeFilter": ("point_cloud_range",),
    "ObjectNameFilter": ("classes",),
    "ResizeCropFlipRotImage": ("data_aug_conf",),
    "GlobalRotScaleTransImage": ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle"),
    "NormalizeMultiviewImage": ("mean", "std", "to_rgb"),
    "PadMultiViewImage": ("size_divisor",),
    "PETRFormatBundle3D": ("class_names", "collect_keys"),
    "Collect3D": ("keys", "meta_keys"),
}
FREE = {"GlobalRotScaleTransImage": ("training",)}  # stored by upstream, never read


def _plain(value: Any) -> Any:
    """Lists/tuples/dicts compared by content (mmcv's ConfigDict and lists vs tuples alike)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return value  # 0.0 == 0 anyway
    return value


def _same(a: Any, b: Any) -> bool:
    return _plain(a) == _plain(b)


def expected_values(cfg: LoaderConfig) -> dict[str, Any]:
    """The value the loader uses for every pipeline parameter it reads (every name of :data:`READ`)."""
    aug = cfg.aug
    return {
        "point_cloud_range": cfg.point_cloud_range,
        "classes": cfg.class_names,
        "class_names": cfg.class_names,
        "data_aug_conf": {k: getattr(aug, k) for k in IDA_KEYS},
        **{k: getattr(aug, k) for k in GRST_KEYS},
        "mean": cfg.mean,
        "std": cfg.std,
        "to_rgb": cfg.to_rgb,
        "size_divisor": cfg.size_divisor,
        "collect_keys": (*GEOMETRY_KEYS, "prev_exists"),
        "keys": COLLECT3D_KEYS,
        "meta_keys": COLLECT3D_META_KEYS,
    }


def check_pipeline(pipeline: Any, cfg: LoaderConfig) -> None:
    """Refuse any step or parameter of ``pipeline`` (``data.train.pipeline``) the loader, set up by
    ``cfg``, does not reproduce."""
    expected = expected_values(cfg)
    steps = list(pipeline)
    types = [step.get("type") if isinstance(step, Mapping) else None for step in steps]
    for i, (kind, want) in enumerate(zip(types, STEPS, strict=False)):
        if kind != want:
            why = "an unknown step" if kind not in STEPS else "the loader runs the steps in upstream's order"
            raise refuse(
                f"data.train.pipeline[{i}].type", kind, f"{want!r} at this position of {list(STEPS)}", why
            )
    if len(steps) != len(STEPS):
        at = min(len(steps), len(STEPS))
        got = types[at] if len(steps) > at else None
        raise refuse(f"data.train.pipeline[{at}].type", got, f"the ten steps {list(STEPS)}")
    for i, (step, kind) in enumerate(zip(steps, types, strict=True)):
        fixed, read, free = FIXED.get(kind, {}), READ.get(kind, ()), FREE.get(kind, ())
        for param in sorted(set(step) - {"type"} - set(fixed) - set(read) - set(free)):
            raise refuse(
                f"data.train.pipeline[{i}] {kind}.{param}",
                step[param],
                f"the parameters {sorted({*fixed, *read, *free})}",
                "a parameter the loader does not know",
            )
        for param, want in fixed.items():
            value = step.get(param, ABSENT_DEFAULTS.get((kind, param), want))
            if not _same(value, want) or (isinstance(want, bool) and not isinstance(value, bool)):
                raise refuse(f"data.train.pipeline[{i}] {kind}.{param}", value, repr(want))
        for param in read:
            if param not in step and kind == "GlobalRotScaleTransImage":
                continue  # the loader takes upstream's defaults for absent ones (config/reader.py)
            value = step.get(param)
            same = (
                sorted(value or ()) == sorted(expected[param]) and len(set(value)) == len(value)
                if param == "collect_keys"
                else _same(value, expected[param])
            )
            if not same:
                raise refuse(
                    f"data.train.pipeline[{i}] {kind}.{param}",
                    value,
                    f"{expected[param]!r}, the value the loader uses",
                    "it differs from the "
                    "config's top-level value the loader reads (ida_aug_conf, img_norm_cfg, "
                    "point_cloud_range, class_names, collect_keys)",
                )
