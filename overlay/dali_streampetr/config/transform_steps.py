"""Upstream's transform steps of a split, step by step, against what the loader reproduces: one
checker (:func:`check_steps`) and a table per split (:data:`TRAIN_STEPS`, :data:`TEST_STEPS`). Every
parameter is one the loader reads (and must equal its value), one it reproduces at a single value, or
free (it changes nothing the batch holds); anything else is refused by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..batch_schema import COLLECT3D_KEYS, COLLECT3D_META_KEYS, GEOMETRY_KEYS, TEST_META_KEYS
from ..settings import GRST_KEYS, IDA_KEYS, LoaderConfig, refuse


@dataclass(frozen=True)
class StepTable:
    """One split's steps: their order and, per step type, its parameters by kind."""

    steps: tuple[str, ...]
    fixed: Mapping[str, Mapping[str, Any]]  # at the only value the loader reproduces
    read: Mapping[str, tuple[str, ...]]  # equal to the loader's value (:attr:`expected`)
    free: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # stored by upstream, never used
    absent: Mapping[tuple[str, str], Any] = field(default_factory=dict)  # upstream's default, if not fixed
    optional: frozenset[tuple[str, str]] = frozenset()  # read parameters that may be absent (the reader
    # takes upstream's default for them)
    nested: Mapping[str, StepTable] = field(default_factory=dict)  # a step's ``transforms``, checked too
    single: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # one value, or a list of one
    expected: Callable[[LoaderConfig], dict[str, Any]] = dict
    read_from: str = ""  # what the loader's values come from, for the message
    action: str = "train"  # refuse()'s: which switch gives the DataLoader back

    def known(self) -> frozenset[str]:
        """Every step type of the table, nested ones included."""
        return frozenset(self.steps).union(*(t.known() for t in self.nested.values()))


def _plain(value: Any) -> Any:
    """Lists/tuples/dicts compared by content (mmcv's ConfigDict and lists vs tuples alike)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value


def same(a: Any, b: Any) -> bool:
    """Equal by content (see :func:`_plain`)."""
    return _plain(a) == _plain(b)


def _one(value: Any) -> bool:
    """A single value, or a list of one (MultiScaleFlipAug3D makes one augmentation per element)."""
    return not isinstance(value, list) or len(value) == 1


def check_steps(steps: Any, table: StepTable, where: str, cfg: LoaderConfig) -> None:
    """Refuse any step or parameter of ``steps`` (found at ``where``, e.g. ``data.train.pipeline``)
    that the loader, set up by ``cfg``, does not reproduce by ``table``."""
    expected, action, known = table.expected(cfg), table.action, table.known()
    steps = list(steps)
    types = [step.get("type") if isinstance(step, Mapping) else None for step in steps]
    for i, (kind, want) in enumerate(zip(types, table.steps, strict=False)):
        if kind != want:
            why = "an unknown step" if kind not in known else "the loader runs the steps in upstream's order"
            raise refuse(
                f"{where}[{i}].type", kind, f"{want!r} at this position of {list(table.steps)}", why,
                action=action,
            )  # fmt: skip
    if len(steps) != len(table.steps):
        at = min(len(steps), len(table.steps))
        got = types[at] if len(steps) > at else None
        raise refuse(f"{where}[{at}].type", got, f"the steps {list(table.steps)}", action=action)
    for i, (step, kind) in enumerate(zip(steps, types, strict=True)):
        here = f"{where}[{i}] {kind}"
        fixed, read, free = table.fixed.get(kind, {}), table.read.get(kind, ()), table.free.get(kind, ())
        for param in sorted(set(step) - {"type"} - set(fixed) - set(read) - set(free)):
            raise refuse(
                f"{here}.{param}", step[param], f"the parameters {sorted({*fixed, *read, *free})}",
                "a parameter the loader does not know", action=action,
            )  # fmt: skip
        for param in table.single.get(kind, ()):
            if not _one(step.get(param)):
                raise refuse(
                    f"{here}.{param}", step.get(param), "a single value",
                    "each value is one more test-time augmentation", action=action,
                )  # fmt: skip
        for param, want in fixed.items():
            value = step.get(param, table.absent.get((kind, param), want))
            if param in table.single.get(kind, ()) and isinstance(value, list):
                value = value[0]  # a list of one is its one value
            if not same(value, want) or (isinstance(want, bool) and not isinstance(value, bool)):
                raise refuse(f"{here}.{param}", value, repr(want), action=action)
        for param in read:
            if param not in step and (kind, param) in table.optional:
                continue
            value = step.get(param)
            if param == "collect_keys":  # a set: any order, no repeats
                ok = (
                    value is not None
                    and sorted(value) == sorted(expected[param])
                    and len(set(value)) == len(value)
                )
            else:
                ok = same(value, expected[param])
            if not ok:
                raise refuse(
                    f"{here}.{param}", value, f"{expected[param]!r}, the value the loader uses",
                    f"it differs from {table.read_from}", action=action,
                )  # fmt: skip
        if kind in table.nested:
            check_steps(step.get("transforms") or (), table.nested[kind], f"{where}[{i}].transforms", cfg)


def _train_values(cfg: LoaderConfig) -> dict[str, Any]:
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


TEST_KEYS = ("img", *GEOMETRY_KEYS)  # the test Collect3D's keys: the test configs' ['img'] + collect_keys


def _test_values(cfg: LoaderConfig) -> dict[str, Any]:
    return {
        "data_aug_conf": {k: getattr(cfg.aug, k) for k in IDA_KEYS},
        "mean": cfg.mean,
        "std": cfg.std,
        "to_rgb": cfg.to_rgb,
        "size_divisor": cfg.size_divisor,
        "class_names": cfg.class_names,
        "collect_keys": GEOMETRY_KEYS,
        "keys": TEST_KEYS,
        "meta_keys": TEST_META_KEYS,
    }


_LOAD = {"to_float32": True, "color_type": "unchanged"}
_PAD = {"size": None, "pad_val": 0}
_ANNOTATIONS = {
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

TRAIN_STEPS = StepTable(
    steps=(
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
    ),
    fixed={
        "LoadMultiViewImageFromFiles": _LOAD,
        "LoadAnnotations3D": _ANNOTATIONS,
        "ResizeCropFlipRotImage": {"training": True, "with_2d": True, "filter_invisible": True},
        "PadMultiViewImage": _PAD,
        "PETRFormatBundle3D": {"with_gt": True, "with_label": True},
    },
    read={
        "ObjectRangeFilter": ("point_cloud_range",),
        "ObjectNameFilter": ("classes",),
        "ResizeCropFlipRotImage": ("data_aug_conf",),
        "GlobalRotScaleTransImage": GRST_KEYS,
        "NormalizeMultiviewImage": ("mean", "std", "to_rgb"),
        "PadMultiViewImage": ("size_divisor",),
        "PETRFormatBundle3D": ("class_names", "collect_keys"),
        "Collect3D": ("keys", "meta_keys"),
    },
    free={"GlobalRotScaleTransImage": ("training",)},
    absent={
        ("LoadMultiViewImageFromFiles", "to_float32"): False,
        ("LoadAnnotations3D", "with_bbox"): False,
        ("LoadAnnotations3D", "with_label"): False,
        ("LoadAnnotations3D", "with_bbox_depth"): False,
    },
    optional=frozenset(("GlobalRotScaleTransImage", k) for k in GRST_KEYS),
    expected=_train_values,
    read_from="the config's top-level value the loader reads (ida_aug_conf, img_norm_cfg, point_cloud_range, "
    "class_names, collect_keys)",
)

TEST_STEPS = StepTable(
    steps=(
        "LoadMultiViewImageFromFiles",
        "ResizeCropFlipRotImage",
        "NormalizeMultiviewImage",
        "PadMultiViewImage",
        "MultiScaleFlipAug3D",
    ),
    fixed={
        "LoadMultiViewImageFromFiles": _LOAD,
        "ResizeCropFlipRotImage": {"training": False},
        "PadMultiViewImage": _PAD,
        "MultiScaleFlipAug3D": {
            "flip": False,
            "pcd_horizontal_flip": False,
            "pcd_vertical_flip": False,
            "pts_scale_ratio": 1,
        },
    },
    read={
        "ResizeCropFlipRotImage": ("data_aug_conf",),
        "NormalizeMultiviewImage": ("mean", "std", "to_rgb"),
        "PadMultiViewImage": ("size_divisor",),
    },
    # Stored or used only for annotations, which the test path does not read; MultiScaleFlipAug3D's
    # scale only sets results['scale'], which no test transform reads (one scale: ``single``).
    free={
        "ResizeCropFlipRotImage": ("with_2d", "filter_invisible"),
        "MultiScaleFlipAug3D": ("img_scale", "flip_direction", "transforms"),
    },
    absent={("LoadMultiViewImageFromFiles", "to_float32"): False},
    nested={
        "MultiScaleFlipAug3D": StepTable(
            steps=("PETRFormatBundle3D", "Collect3D"),
            fixed={"PETRFormatBundle3D": {"with_label": False}},
            read={"PETRFormatBundle3D": ("class_names", "collect_keys"), "Collect3D": ("keys", "meta_keys")},
            free={"PETRFormatBundle3D": ("with_gt",)},
            expected=_test_values,
            read_from="what the loader reads (class_names, the geometry collect_keys) or from upstream's "
            "test configs",
            action="evaluate",
        )
    },
    single={"MultiScaleFlipAug3D": ("img_scale", "pts_scale_ratio", "flip_direction")},
    expected=_test_values,
    read_from="what the loader reads (the test steps' data_aug_conf and normalisation, the pad's divisor)",
    action="evaluate",
)
