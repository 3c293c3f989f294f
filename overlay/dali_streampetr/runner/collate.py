"""The plain batch (:mod:`..batch_schema`) as mmcv's collated batch of each split
(:func:`to_collated`, :func:`to_eval_collated`), and the collate steps that note what a batch
carried: :class:`SlotLog` (``data_loading_config.log_slots``) and :class:`SkippedImages`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmcv.parallel import DataContainer
from mmdet3d.core.bbox import Box3DMode, LiDARInstance3DBoxes

from ..batch_schema import COLLATED_KEYS, GEOMETRY_KEYS, META_ORDER, STACKED_KEYS, TEST_META_KEYS
from ..loader import Collate

STACKED = set(STACKED_KEYS)


def to_collated(batch: dict[str, Any]) -> dict[str, DataContainer]:
    """What ``mmcv.parallel.collate(samples, samples_per_gpu=B)`` returns for B ``union2one`` samples."""
    boxes = [
        [LiDARInstance3DBoxes(t, box_dim=t.shape[-1]) for t in frames] for frames in batch["gt_bboxes_3d"]
    ]
    metas = []
    for b, frames in enumerate(batch["img_metas"]):
        per_frame = []
        for t, meta in enumerate(frames):
            full = {
                **meta,
                "box_mode_3d": Box3DMode.LIDAR,
                "box_type_3d": LiDARInstance3DBoxes,
                "gt_bboxes_3d": DataContainer(boxes[b][t], cpu_only=True),
                "gt_labels_3d": DataContainer(batch["gt_labels_3d"][b][t]),
            }
            per_frame.append({k: full[k] for k in META_ORDER})  # Collect3D's order
        metas.append(per_frame)
    out: dict[str, DataContainer] = {}
    for key in COLLATED_KEYS:  # Collect3D's order: img_metas, then its keys
        if key in STACKED:
            out[key] = DataContainer([batch[key]], stack=True, padding_value=0)
        elif key == "img_metas":
            out[key] = DataContainer([metas], cpu_only=True)
        elif key == "gt_bboxes_3d":
            out[key] = DataContainer([boxes], cpu_only=True)
        else:
            out[key] = DataContainer([batch[key]])
    return out


def eval_meta(batch: dict[str, Any], b: int = 0) -> dict[str, Any]:
    """Sample ``b``'s ``img_metas`` entry as the test pipeline's ``Collect3D`` makes it."""
    meta = {
        **batch["img_metas"][b][0],
        "flip": False,
        "box_mode_3d": Box3DMode.LIDAR,
        "box_type_3d": LiDARInstance3DBoxes,
    }
    return {k: meta[k] for k in TEST_META_KEYS}


def to_eval_collated(batch: dict[str, Any]) -> dict[str, list[DataContainer]]:
    """What upstream's test DataLoader yields (``mmcv.parallel.collate`` of the test pipeline's
    samples), built directly: the images are DALI's batch tensor as it is, not copied by a stack
    (checked against upstream's DataLoader in tests/equivalence/test_eval_split_stack.py)."""
    n = len(batch["img_metas"])
    metas = [eval_meta(batch, b) for b in range(n)]
    out = {
        "img_metas": [DataContainer([metas], cpu_only=True)],
        "img": [DataContainer([batch["img"][:, 0]], stack=True, padding_value=0)],
    }
    for key in GEOMETRY_KEYS:
        out[key] = [DataContainer([[batch[key][b, 0] for b in range(n)]], stack=False, padding_value=0)]
    return out


class SkippedImages:
    """A collate step: notes every camera served black (``on_bad_image='skip'``) of a test batch,
    then hands the batch to ``then``. ``entries``: (sample token, camera, frame index) in test order."""

    def __init__(self, then: Any) -> None:
        self.then, self.entries = then, []

    def __call__(self, batch: dict[str, Any]) -> Any:
        for record in batch["dali"]:
            for frame in record["frames"]:
                for cam in frame["bad_cameras"]:
                    self.entries.append((frame["token"], cam, frame["index"]))
        return self.then(batch)


class SlotLog:
    """The collate: one line per batch, ``{"iter", "rank", "slots"}``. ``append`` is asked at the
    first batch whether to keep the file's lines (``--auto-resume`` decides after the build)."""

    def __init__(self, log_path: Path, rank: int, *, append: Callable[[], bool], then: Collate) -> None:
        self.log_path, self.rank, self.then = log_path, rank, then
        self._append: Callable[[], bool] | None = append
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, batch: dict[str, Any]) -> Any:
        if self._append is not None:
            if not self._append():
                self.log_path.write_text("")
            self._append = None
        slots = []
        images = batch["img"].detach().cpu().numpy()  # one device-to-host copy for the whole batch
        for b, (meta, record, prev) in enumerate(
            zip(batch["img_metas"], batch["dali"], batch["prev_exists"], strict=True)
        ):
            pixels = images[b].tobytes()
            slots.append(  # the sample's own (last) frame; a multi-frame sample also lists its queue
                {"scene": meta[-1]["scene_token"], "token": record["token"], "index": record["index"],
                 "prev_exists": bool(prev[-1]), "draw": record["draw"].as_dict(),
                 "queue": [f["index"] for f in record["frames"]],
                 "img_sha1": hashlib.sha1(pixels).hexdigest()}
            )  # fmt: skip
        line = {"iter": batch["dali"][0]["iteration"], "rank": self.rank, "slots": slots}
        with self.log_path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return self.then(batch)
