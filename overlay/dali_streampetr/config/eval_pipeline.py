"""The test pipeline of the config (``data.test.pipeline`` / ``data.val.pipeline``, else
``test_pipeline``), step by step, against what the test loader reproduces.

Upstream's test path (every test config of the pin): ``LoadMultiViewImageFromFiles(to_float32)``,
``ResizeCropFlipRotImage(training=False)``, ``NormalizeMultiviewImage``,
``PadMultiViewImage(size_divisor)`` and ``MultiScaleFlipAug3D(flip=False)`` around
``PETRFormatBundle3D(with_label=False)`` and ``Collect3D``. One augmentation only: a single image
scale and point-cloud scale, no flip. Every parameter is either one the loader reads (and then equal
to the value it uses) or free (it changes nothing the batch holds); anything else is refused with
the step, the parameter, the value and what is supported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..batch_schema import GEOMETRY_KEYS, TEST_META_KEYS
from .settings import IDA_KEYS, LoaderConfig, refuse
from .train_pipeline import _same

STEPS = (
    "LoadMultiViewImageFromFiles",
    "ResizeCropFlipRotImage",
    "NormalizeMultiviewImage",
    "PadMultiViewImage",
    "MultiScaleFlipAug3D",
)
INNER = ("PETRFormatBundle3D", "Collect3D")  # MultiScaleFlipAug3D's transforms
TEST_KEYS = ("img", *GEOMETRY_KEYS)  # Collect3D's keys: the test configs' ['img'] + collect_keys
# Parameters at the only value the loader reproduces (upstream's default where absent).
FIXED: dict[str, dict[str, Any]] = {
    "LoadMultiViewImageFromFiles": {"to_float32": True, "color_type": "unchanged"},
    "ResizeCropFlipRotImage": {"training": False},
    "PadMultiViewImage": {"size": None, "pad_val": 0},
    "MultiScaleFlipAug3D": {"flip": False, "pcd_horizontal_flip": False, "pcd_vertical_flip": False},
    "PETRFormatBundle3D": {"with_label": False},
}
ABSENT_DEFAULTS = {("LoadMultiViewImageFromFiles", "to_float32"): False}
READ: dict[str, tuple[str, ...]] = {
    "ResizeCropFlipRotImage": ("data_aug_conf",),
    "NormalizeMultiviewImage": ("mean", "std", "to_rgb"),
    "PadMultiViewImage": ("size_divisor",),
    "PETRFormatBundle3D": ("class_names", "collect_keys"),
    "Collect3D": ("keys", "meta_keys"),
}
# Stored or used only for annotations, which the test path does not read; MultiScaleFlipAug3D's
# scale only sets results['scale'], which no test transform reads (one scale: checked below).
FREE = {
    "ResizeCropFlipRotImage": ("with_2d", "filter_invisible"),
    "MultiScaleFlipAug3D": ("img_scale", "pts_scale_ratio", "flip_direction", "transforms"),
    "PETRFormatBundle3D": ("with_gt",),
}


def _one(value: Any) -> bool:
    """A single value, or a list of one (MultiScaleFlipAug3D makes one augmentation per element)."""
    return not isinstance(value, list) or len(value) == 1


def expected_values(cfg: LoaderConfig) -> dict[str, Any]:
    aug = cfg.aug
    return {
        "data_aug_conf": {k: getattr(aug, k) for k in IDA_KEYS},
        "mean": cfg.mean,
        "std": cfg.std,
        "to_rgb": cfg.to_rgb,
        "size_divisor": cfg.size_divisor,
        "class_names": cfg.class_names,
        "collect_keys": GEOMETRY_KEYS,
        "keys": TEST_KEYS,
        "meta_keys": TEST_META_KEYS,
    }


def _check_steps(steps: list, names: tuple[str, ...], where: str, cfg: LoaderConfig) -> None:
    expected = expected_values(cfg)
    types = [step.get("type") if isinstance(step, Mapping) else None for step in steps]
    for i, (kind, want) in enumerate(zip(types, names, strict=False)):
        if kind != want:
            why = (
                "an unknown step"
                if kind not in (*STEPS, *INNER)
                else "the loader runs upstream's test steps in order"
            )
            raise refuse(
                f"{where}[{i}].type",
                kind,
                f"{want!r} at this position of {list(names)}",
                why,
                action="evaluate",
            )
    if len(steps) != len(names):
        at = min(len(steps), len(names))
        raise refuse(
            f"{where}[{at}].type",
            types[at] if len(steps) > at else None,
            f"the steps {list(names)}",
            action="evaluate",
        )
    for i, (step, kind) in enumerate(zip(steps, types, strict=True)):
        fixed, read, free = FIXED.get(kind, {}), READ.get(kind, ()), FREE.get(kind, ())
        for param in sorted(set(step) - {"type"} - set(fixed) - set(read) - set(free)):
            raise refuse(
                f"{where}[{i}] {kind}.{param}",
                step[param],
                f"the parameters {sorted({*fixed, *read, *free})}",
                "a parameter the test loader does not know",
                action="evaluate",
            )
        for param, want in fixed.items():
            value = step.get(param, ABSENT_DEFAULTS.get((kind, param), want))
            if not _same(value, want) or (isinstance(want, bool) and not isinstance(value, bool)):
                raise refuse(f"{where}[{i}] {kind}.{param}", value, repr(want), action="evaluate")
        for param in read:
            value = step.get(param)
            if param == "collect_keys":
                same = (
                    value is not None
                    and sorted(value) == sorted(expected[param])
                    and len(set(value)) == len(value)
                )
            else:
                same = _same(value, expected[param])
            if not same:
                raise refuse(
                    f"{where}[{i}] {kind}.{param}",
                    value,
                    f"{expected[param]!r}, the value the loader uses",
                    "it differs from what the loader reads (class_names, the geometry collect_keys) "
                    "or from upstream's test configs",
                    action="evaluate",
                )
        if kind == "MultiScaleFlipAug3D":
            for param in ("img_scale", "pts_scale_ratio", "flip_direction"):
                if not _one(step.get(param)):
                    raise refuse(
                        f"{where}[{i}] {kind}.{param}",
                        step.get(param),
                        "a single value",
                        "each value is one more test-time augmentation",
                        action="evaluate",
                    )
            if step.get("pts_scale_ratio", 1) not in (1, [1], 1.0, [1.0]):
                raise refuse(
                    f"{where}[{i}] {kind}.pts_scale_ratio",
                    step.get("pts_scale_ratio"),
                    "1",
                    action="evaluate",
                )
            _check_steps(list(step.get("transforms") or ()), INNER, f"{where}[{i}].transforms", cfg)


def check_eval_pipeline(pipeline: Any, cfg: LoaderConfig, split: str = "test") -> None:
    """Refuse any step or parameter of the test pipeline of ``data.<split>`` the test loader, set
    up by ``cfg``, does not reproduce."""
    _check_steps(list(pipeline), STEPS, f"data.{split}.pipeline", cfg)
