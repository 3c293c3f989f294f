"""The loader end to end on the synthetic nuScenes-format data set: 1600x900 JPEGs, r50 settings."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from dali_streampetr.batch.transforms import project
from dali_streampetr.loader import build_loader
from float_tolerance import BATCH_LIDAR2IMG_OPS, float_atol, projection_atol


@pytest.fixture(scope="module")
def batches(synthetic_dataset):
    with build_loader({}, synthetic_dataset, seed=0) as loader:
        return [next(loader) for _ in range(4)]


def test_full_size_structure(batches) -> None:
    batch = batches[0]
    assert batch["img"].shape == (2, 1, 6, 3, 256, 704) and batch["img"].dtype == torch.float32
    meta = batch["img_metas"][0][0]
    assert meta["ori_shape"] == (900, 1600, 3, 6) and meta["pad_shape"] == [(256, 704, 3)] * 6
    # normalised with the r50 mean/std: the textured synthetic images span a wide range
    assert -2.2 < batch["img"].min() < -1.0 and 1.0 < batch["img"].max() < 2.7


def raw_centres(synthetic_dataset) -> dict[str, np.ndarray]:
    """token -> (n, 3) box centres of every annotation in the info pickle (before any filter)."""
    with open(synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl", "rb") as f:
        infos = pickle.load(f)["infos"]
    return {info["token"]: np.asarray(info["gt_boxes"], np.float64).reshape(-1, 7)[:, :3] for info in infos}


def test_2d_centres_are_raw_3d_centres_through_the_output_matrices(batches, synthetic_dataset) -> None:
    """Every unclipped 2D centre is a 3D box centre of the pickle, moved by the recorded BEV rotation and
    scale, projected with the output lidar2img (resize, crop, flip, rotation, scale all in play)."""
    centres, checked = raw_centres(synthetic_dataset), 0
    for batch in batches:
        for b, record in enumerate(batch["dali"]):
            draw = record["draw"]
            # independent oracle: the BEV rotation (points by -angle) and scale, not dali_streampetr's
            c, s = np.cos(draw.rot_angle), np.sin(draw.rot_angle)
            moved = draw.scale_ratio * centres[record["token"]] @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
            for cam in range(6):
                l2i = batch["lidar2img"][b, 0, cam].numpy().astype(np.float64)
                uv, depth = project(l2i, moved)
                # float32 (tests/float_tolerance.py): the matrix's chain; the 2D centre: the pickle's
                # float32, the resize, the shift and the cast (4) on <= 1600 px; hypot: sqrt 2
                tol = projection_atol(np.float32, l2i, moved, BATCH_LIDAR2IMG_OPS)
                tol = np.sqrt(2) * (tol + float_atol(np.float32, 1600, 4))
                for u, v in batch["centers2d"][b][0][cam].numpy():
                    if 0 < u < 704 and 0 < v < 256:  # not clipped to the canvas
                        err = np.hypot(uv[:, 0] - u, uv[:, 1] - v) + 1e3 * (depth <= 0)
                        assert (err <= tol).any(), (cam, u, v, err.min())
                        checked += 1
    assert checked >= 20
