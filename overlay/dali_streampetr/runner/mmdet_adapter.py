"""Wrap plain batches into the collated structure of StreamPETR's DataLoader (DataContainers,
``LiDARInstance3DBoxes``, ``img_metas``). Imports mmcv/mmdet3d at module level, as :mod:`.integration`
does; the package's other modules import without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmcv.parallel import DataContainer
from mmdet.utils import get_root_logger
from mmdet3d.core.bbox import Box3DMode, LiDARInstance3DBoxes

from ..batch.schema import STACKED_KEYS
from ..config.modes import COLLECT_KEYS
from ..loader import Collate, DaliStreamLoader, build_loader

# Collect3D puts img_metas first, then its ``keys`` (train pipeline + collect_keys) in order.
ANNOTATION_KEYS = ("gt_bboxes_3d", "gt_labels_3d", "img", "gt_bboxes", "gt_labels", "centers2d", "depths")
KEY_ORDER = ("img_metas", *ANNOTATION_KEYS, "prev_exists", *COLLECT_KEYS)
STACKED = set(STACKED_KEYS)
META_ORDER = ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "box_mode_3d", "box_type_3d",
              "img_norm_cfg", "scene_token")  # fmt: skip


def to_collated(batch: dict[str, Any]) -> dict[str, DataContainer]:
    """What ``mmcv.parallel.collate(samples, samples_per_gpu=B)`` returns for B ``union2one`` samples."""
    boxes = [
        [LiDARInstance3DBoxes(t, box_dim=t.shape[-1]) for t in frames] for frames in batch["gt_bboxes_3d"]
    ]
    metas = []
    for b, frames in enumerate(batch["img_metas"]):
        per_frame = []
        for t, meta in enumerate(frames):
            full = {**meta, "box_mode_3d": Box3DMode.LIDAR, "box_type_3d": LiDARInstance3DBoxes}
            full = {k: full[k] for k in META_ORDER}
            full["gt_bboxes_3d"] = DataContainer(boxes[b][t], cpu_only=True)
            full["gt_labels_3d"] = DataContainer(batch["gt_labels_3d"][b][t])
            per_frame.append(full)
        metas.append(per_frame)
    out: dict[str, DataContainer] = {}
    for key in KEY_ORDER:
        if key in STACKED:
            out[key] = DataContainer([batch[key]], stack=True, padding_value=0)
        elif key == "img_metas":
            out[key] = DataContainer([metas], cpu_only=True)
        elif key == "gt_bboxes_3d":
            out[key] = DataContainer([boxes], cpu_only=True)
        else:
            out[key] = DataContainer([batch[key]])
    return out


class MMDetDaliLoader:
    """What ``IterBasedRunner`` needs from a data loader: iter/next, ``len``, ``sampler.set_epoch``,
    around a loader that collates with :func:`to_collated` (:func:`build_mmdet_loader`)."""

    def __init__(self, loader: DaliStreamLoader) -> None:
        self.loader = loader
        self.sampler = loader.sampler

    def __iter__(self) -> MMDetDaliLoader:
        iter(self.loader)  # an epoch-based loader starts counting its epoch's batches here
        return self

    def __next__(self) -> dict[str, DataContainer]:
        return next(self.loader)  # collated by the loader, before it starts the next batch

    def __len__(self) -> int:
        return len(self.loader)

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)

    def close(self) -> None:
        self.loader.close()


def build_mmdet_loader(
    config: Any, data_root: str | Path, *, collate: Collate = to_collated, **kwargs: Any
) -> MMDetDaliLoader:
    """The DataLoader drop-in from the training config (arguments: :func:`..loader.build_loader`;
    ``collate`` ends in :func:`to_collated`). Skipped bad images are reported in the runner's log."""
    return MMDetDaliLoader(
        build_loader(config, data_root, collate=collate, logger=get_root_logger(), **kwargs)
    )
