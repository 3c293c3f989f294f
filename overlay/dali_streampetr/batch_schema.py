"""The plain batch :class:`~..loader.DaliStreamLoader` hands over: every key, its nesting, shape and
dtype (:data:`BATCH`, the one declaration, in upstream's ``Collect3D`` order; every key list of the
package is derived from it here), and :func:`batch_problems`, which checks a batch against it.
Size symbols: ``B`` samples per GPU, ``T`` frames per sample, ``N`` cameras, ``H`` x ``W`` the padded
image; lower case ones count the boxes of one frame (``n``) or camera (``k``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

F32, F64, I64 = torch.float32, torch.float64, torch.int64


@dataclass(frozen=True)
class BatchKey:
    """One key: ``nesting`` the list levels above each leaf (``("B", "T")``: B lists of T), the leaf
    a tensor of one of ``shapes`` and ``dtypes``, or (``fields`` given) a dict with those keys."""

    name: str
    nesting: tuple[str, ...]
    shapes: tuple[tuple[int | str, ...], ...] = ()
    dtypes: tuple[torch.dtype, ...] = ()
    fields: tuple[str, ...] = ()
    doc: str = ""
    role: str = ""  # image, sequence, geometry, annotation, meta, record


# upstream's Collect3D meta_keys (the configs' value, checked), in its order
COLLECT3D_META_KEYS = ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "flip",
                       "box_mode_3d", "box_type_3d", "img_norm_cfg", "scene_token", "gt_bboxes_3d",
                       "gt_labels_3d")  # fmt: skip
# the test configs' Collect3D meta_keys: no annotations
TEST_META_KEYS = tuple(k for k in COLLECT3D_META_KEYS if k not in ("gt_bboxes_3d", "gt_labels_3d"))
NEVER_SET_META = ("flip",)  # not in upstream's results, so Collect3D leaves it out
COLLATED_META = ("box_mode_3d", "box_type_3d", "gt_bboxes_3d", "gt_labels_3d")  # the mmdet adapter adds them
META_ORDER = tuple(k for k in COLLECT3D_META_KEYS if k not in NEVER_SET_META)  # a collated img_metas entry
META_FIELDS = tuple(k for k in META_ORDER if k not in COLLATED_META)  # a plain img_metas entry
RECORD_FIELDS = ("iteration", "index", "token", "draw", "bad_cameras", "frames", "rejected", "shuffles")

BATCH = (
    BatchKey("img_metas", ("B", "T"), fields=META_FIELDS, role="meta",
             doc="upstream's per-frame meta, without the box type"),
    BatchKey("gt_bboxes_3d", ("B", "T"), (("n", 9),), (F32,), role="annotation",
             doc="LiDAR boxes after the range/name filters"),
    BatchKey("gt_labels_3d", ("B", "T"), (("n",),), (I64, F64), role="annotation",
             doc="float64 when the info has no valid box, as upstream"),
    BatchKey("img", (), (("B", "T", "N", 3, "H", "W"),), (F32,), role="image",
             doc="normalised images; on the GPU ``device_id`` when one is set"),
    BatchKey("gt_bboxes", ("B", "T", "N"), (("k", 4), (0,)), (F32,), role="annotation",
             doc="``(0,)`` for a camera without 2D boxes in the info"),
    BatchKey("gt_labels", ("B", "T", "N"), (("k",),), (I64,), role="annotation"),
    BatchKey("centers2d", ("B", "T", "N"), (("k", 2), (0,)), (F32,), role="annotation"),
    BatchKey("depths", ("B", "T", "N"), (("k",),), (F32,), role="annotation"),
    BatchKey("prev_exists", (), (("B", "T"),), (F32,), role="sequence",
             doc="1 when the frame before is of the same sequence"),
    BatchKey("lidar2img", (), (("B", "T", "N", 4, 4),), (F32,), role="geometry"),
    BatchKey("intrinsics", (), (("B", "T", "N", 4, 4),), (F32,), role="geometry"),
    BatchKey("extrinsics", (), (("B", "T", "N", 4, 4),), (F32,), role="geometry"),
    BatchKey("timestamp", (), (("B", "T"),), (F64,), role="geometry"),
    BatchKey("img_timestamp", (), (("B", "T", "N"),), (F64,), role="geometry"),
    BatchKey("ego_pose", (), (("B", "T", 4, 4),), (F32,), role="geometry"),
    BatchKey("ego_pose_inv", (), (("B", "T", 4, 4),), (F32,), role="geometry"),
    BatchKey("dali", ("B",), fields=RECORD_FIELDS, role="record",
             doc="ours, per sample: the iteration, its (last) frame's index, token, draw and bad cameras, "
                 "every frame's record (``frames``) and the queue's draws (``rejected``, ``shuffles``)"),
)  # fmt: skip
SCHEMA = {key.name: key for key in BATCH}
STACKED_KEYS = tuple(k.name for k in BATCH if not k.nesting)  # tensors with the batch axes first
LIST_KEYS = tuple(k.name for k in BATCH if k.nesting and not k.fields)  # per-frame/camera tensors in lists
GEOMETRY_KEYS = tuple(k.name for k in BATCH if k.role == "geometry")  # upstream's collect_keys
ANNOTATION_KEYS = tuple(k.name for k in BATCH if k.role == "annotation")  # the external source's record
PER_FRAME_KEYS = tuple(k for k in ANNOTATION_KEYS if len(SCHEMA[k].nesting) == 2)  # one tensor per frame
PER_CAMERA_KEYS = tuple(k for k in ANNOTATION_KEYS if len(SCHEMA[k].nesting) == 3)  # one per camera
COLLATED_KEYS = tuple(k.name for k in BATCH if k.role != "record")  # the collated batch, in its order
COLLECT3D_KEYS = tuple(k for k in COLLATED_KEYS if SCHEMA[k].role != "meta")  # Collect3D's ``keys``


def batch_sizes(cfg: Any, n_cams: int) -> dict[str, int]:
    """The size symbols of a :class:`~..settings.LoaderConfig`'s batches."""
    fH, fW = cfg.aug.final_dim
    d = cfg.size_divisor
    return {
        "B": cfg.samples_per_gpu,
        "T": cfg.mode.queue_length,
        "N": n_cams,
        "H": math.ceil(fH / d) * d,
        "W": math.ceil(fW / d) * d,
    }


def _leaves(
    value: Any, nesting: tuple[str, ...], sizes: Mapping[str, int], where: tuple[int, ...], out: list
) -> list:
    """(position, leaf) pairs under ``nesting``, noting lists of the wrong length in ``out``."""
    if not nesting:
        return [(where, value)]
    if not isinstance(value, list) or len(value) != sizes[nesting[0]]:
        got = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
        at = f" at {list(where)}" if where else ""
        out.append(f"{at}: {got}, expected a list of {nesting[0]}={sizes[nesting[0]]}")
        return []
    return [leaf for i, v in enumerate(value) for leaf in _leaves(v, nesting[1:], sizes, (*where, i), out)]


def _shape_fits(shape: tuple[int, ...], pattern: tuple[int | str, ...], bound: dict, sizes: Mapping) -> bool:
    if len(shape) != len(pattern):
        return False
    trial = dict(bound)
    for dim, want in zip(shape, pattern, strict=True):
        if isinstance(want, int):
            if dim != want:
                return False
        elif want in sizes:
            if dim != sizes[want]:
                return False
        elif trial.setdefault(want, dim) != dim:
            return False
    bound.update(trial)
    return True


def batch_problems(batch: Mapping[str, Any], sizes: Mapping[str, int]) -> list[str]:
    """Every way ``batch`` differs from the schema (missing or extra keys, nesting, shape, dtype,
    dict fields, per-frame/camera counts that disagree between keys); empty when it fits."""
    problems = [f"missing key {k!r}" for k in SCHEMA if k not in batch]
    problems += [f"unexpected key {k!r}" for k in batch if k not in SCHEMA]
    counts: dict[tuple[int, ...], dict[str, int]] = {}  # per frame / camera position: n, k
    for key in BATCH:
        if key.name not in batch:
            continue
        found: list[str] = []
        for where, leaf in _leaves(batch[key.name], key.nesting, sizes, (), found):
            at = f" at {list(where)}" if where else ""
            if key.fields:
                if not isinstance(leaf, dict) or tuple(leaf) != key.fields:
                    got = list(leaf) if isinstance(leaf, dict) else type(leaf).__name__
                    found.append(f"{at}: fields {got}, expected {list(key.fields)}")
                continue
            if not isinstance(leaf, torch.Tensor):
                found.append(f"{at}: a {type(leaf).__name__}, expected a tensor")
                continue
            if leaf.dtype not in key.dtypes:
                found.append(f"{at}: dtype {leaf.dtype}, expected {' or '.join(map(str, key.dtypes))}")
            bound = counts.setdefault(where, {})
            if not any(_shape_fits(tuple(leaf.shape), p, bound, sizes) for p in key.shapes):
                found.append(f"{at}: shape {tuple(leaf.shape)}, expected {' or '.join(map(str, key.shapes))}")
        problems += [f"{key.name}{p}" for p in found]
    return problems
