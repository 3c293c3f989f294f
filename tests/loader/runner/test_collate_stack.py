"""Stack tier: the adapter reproduces what mmcv's collate makes of upstream's union2one samples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from bit_for_bit import assert_same

pytestmark = pytest.mark.stack
KEYS = ("img_metas", "gt_bboxes_3d", "gt_labels_3d", "img", "gt_bboxes", "gt_labels", "centers2d", "depths",
        "prev_exists", "lidar2img", "intrinsics", "extrinsics", "timestamp", "img_timestamp", "ego_pose",
        "ego_pose_inv")  # fmt: skip


def _plain_batch(n: int = 2) -> dict:
    """A plain batch as the iterator yields it (2 samples, T=1, 6 cameras, tiny images)."""
    rng = np.random.default_rng(0)
    f32 = lambda *s: torch.from_numpy(rng.normal(size=s).astype(np.float32))  # noqa: E731
    batch = {
        "img": f32(n, 1, 6, 3, 32, 64),
        "prev_exists": torch.tensor([[0.0], [1.0]]),
        "lidar2img": f32(n, 1, 6, 4, 4),
        "intrinsics": f32(n, 1, 6, 4, 4),
        "extrinsics": f32(n, 1, 6, 4, 4),
        "timestamp": torch.rand(n, 1, dtype=torch.float64),
        "img_timestamp": torch.rand(n, 1, 6, dtype=torch.float64),
        "ego_pose": f32(n, 1, 4, 4),
        "ego_pose_inv": f32(n, 1, 4, 4),
        "gt_bboxes_3d": [[f32(3, 9)] for _ in range(n)],
        "gt_labels_3d": [[torch.tensor([0, 4, 9])] for _ in range(n)],
        "gt_bboxes": [[[f32(2, 4) for _ in range(6)]] for _ in range(n)],
        "gt_labels": [[[torch.tensor([1, 2]) for _ in range(6)]] for _ in range(n)],
        "centers2d": [[[f32(2, 2) for _ in range(6)]] for _ in range(n)],
        "depths": [[[f32(2) for _ in range(6)]] for _ in range(n)],
        "img_metas": [
            [
                {
                    "filename": ["a.jpg"] * 6,
                    "ori_shape": (900, 1600, 3, 6),
                    "img_shape": [(32, 64, 3)] * 6,
                    "pad_shape": [(32, 64, 3)] * 6,
                    "scale_factor": 1.0,
                    "scene_token": f"s{b}",
                    "img_norm_cfg": {
                        "mean": np.zeros(3, np.float32),
                        "std": np.ones(3, np.float32),
                        "to_rgb": True,
                    },
                }
            ]
            for b in range(n)
        ],  # fmt: skip
        "dali": [{} for _ in range(n)],
    }
    return batch


def _upstream_samples(batch: dict) -> list[dict]:
    """Per-sample dicts as Collect3D + union2one build them, from the same values."""
    from mmcv.parallel import DataContainer as DC
    from mmdet3d.core.bbox import Box3DMode, LiDARInstance3DBoxes

    samples = []
    for b in range(len(batch["img_metas"])):
        boxes = LiDARInstance3DBoxes(batch["gt_bboxes_3d"][b][0], box_dim=9)
        labels = batch["gt_labels_3d"][b][0]
        meta = dict(batch["img_metas"][b][0])
        meta = {k: meta[k] for k in ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor")}
        meta.update(box_mode_3d=Box3DMode.LIDAR, box_type_3d=LiDARInstance3DBoxes,
                    img_norm_cfg=batch["img_metas"][b][0]["img_norm_cfg"], scene_token=f"s{b}",
                    gt_bboxes_3d=DC(boxes, cpu_only=True), gt_labels_3d=DC(labels))  # fmt: skip
        s = {"img_metas": DC([meta], cpu_only=True), "gt_bboxes_3d": DC([boxes], cpu_only=True)}
        for key in KEYS[2:]:
            if key in ("gt_labels_3d", "gt_bboxes", "gt_labels", "centers2d", "depths"):
                s[key] = DC(batch[key][b], cpu_only=False)
            else:
                s[key] = DC(batch[key][b], cpu_only=False, stack=True, pad_dims=None)
        samples.append(s)
    return samples


def test_collated_structure_matches_mmcv_collate():
    pytest.importorskip("mmcv", reason="stack tier: mmcv is not importable in this interpreter")
    pytest.importorskip("mmdet3d", reason="stack tier: mmdet3d is not importable in this interpreter")
    from dali_streampetr import to_collated
    from mmcv.parallel import collate

    batch = _plain_batch()
    assert_same(to_collated(batch), collate(_upstream_samples(batch), samples_per_gpu=2), "collated")
