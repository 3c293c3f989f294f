"""The loader end to end on the synthetic nuScenes-format data set: 1600x900 JPEGs, r50 settings."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from box_match import own_box, project
from dali_streampetr.loader import build_loader
from float_tolerance import BATCH_LIDAR2IMG_OPS


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
    """Every unclipped 2D centre is the projection of its own 3D box centre of the pickle (pixel and
    depth; one box, not any), moved by the recorded BEV rotation and scale, with the output
    lidar2img (resize, crop, flip, rotation, scale all in play). Boxes within 1 m are left out."""
    centres, checked = raw_centres(synthetic_dataset), 0
    for batch in batches:
        for b, record in enumerate(batch["dali"]):
            draw = record["draw"]
            # independent oracle: the BEV rotation (points by -angle) and scale, not dali_streampetr's
            c, s = np.cos(draw.rot_angle), np.sin(draw.rot_angle)
            moved = draw.scale_ratio * centres[record["token"]] @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
            for cam in range(6):
                l2i = batch["lidar2img"][b, 0, cam].numpy().astype(np.float64)
                depths = batch["depths"][b][0][cam].numpy()
                for (u, v), d in zip(batch["centers2d"][b][0][cam].numpy(), depths, strict=True):
                    if 0 < u < 704 and 0 < v < 256:  # not clipped to the canvas
                        checked += own_box(l2i, moved, (u, v), float(d), BATCH_LIDAR2IMG_OPS) is not None
    assert checked >= 20


def test_a_centre_on_another_box_or_at_another_depth_is_not_its_own(batches, synthetic_dataset) -> None:
    """The match can fail: a centre moved onto another box's projection, or given another box's
    depth, matches no box (the former check accepted a centre near any box's projection)."""
    batch, b, cam = batches[0], 0, 0
    record = batch["dali"][b]
    c, s = np.cos(record["draw"].rot_angle), np.sin(record["draw"].rot_angle)
    moved = record["draw"].scale_ratio * raw_centres(synthetic_dataset)[record["token"]]
    moved = moved @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    for cam in range(6):
        l2i = batch["lidar2img"][b, 0, cam].numpy().astype(np.float64)
        uv, z = project(l2i, moved)
        seen = np.flatnonzero(
            (z >= 1.0) & (uv[:, 0] > 0) & (uv[:, 0] < 704) & (uv[:, 1] > 0) & (uv[:, 1] < 256)
        )
        if len(seen) >= 2:
            break
    i, j = seen[:2]
    assert own_box(l2i, moved, uv[i], float(z[i]), BATCH_LIDAR2IMG_OPS) == i
    with pytest.raises(AssertionError):
        own_box(l2i, moved, uv[i], float(z[j]), BATCH_LIDAR2IMG_OPS)  # box i's pixel, box j's depth
    with pytest.raises(AssertionError):
        own_box(l2i, moved, uv[i] + (0.5, 0.0), float(z[i]), BATCH_LIDAR2IMG_OPS)  # half a pixel off
    assert own_box(l2i, moved, uv[i], 0.5, BATCH_LIDAR2IMG_OPS) is None  # closer than 1 m: not checked
