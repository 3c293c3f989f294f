"""The iterator: structure, sequence order, geometry of the outputs, determinism, resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from box_match import own_box
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.loader import build_loader
from float_tolerance import BATCH_LIDAR2IMG_OPS, projection_atol
from loader_data import tiny_config


@pytest.fixture(scope="module")
def batches(tiny_root):
    with build_loader(tiny_config(), tiny_root, seed=1) as loader:
        return loader, [next(loader) for _ in range(8)]


def test_structure_dtypes_shapes(batches):
    _, (batch, *_) = batches
    shapes = {
        "img": ((2, 1, 6, 3, 64, 192), torch.float32),
        "lidar2img": ((2, 1, 6, 4, 4), torch.float32),
        "intrinsics": ((2, 1, 6, 4, 4), torch.float32),
        "extrinsics": ((2, 1, 6, 4, 4), torch.float32),
        "timestamp": ((2, 1), torch.float64),
        "img_timestamp": ((2, 1, 6), torch.float64),
        "ego_pose": ((2, 1, 4, 4), torch.float32),
        "ego_pose_inv": ((2, 1, 4, 4), torch.float32),
        "prev_exists": ((2, 1), torch.float32),
    }
    for key, (shape, dtype) in shapes.items():
        assert (tuple(batch[key].shape), batch[key].dtype) == (shape, dtype), key
    for b in range(2):
        boxes, labels = batch["gt_bboxes_3d"][b][0], batch["gt_labels_3d"][b][0]
        assert boxes.dtype == torch.float32 and boxes.shape[1] == 9 and labels.dtype == torch.int64
        assert len(boxes) == len(labels) and ((labels >= 0) & (labels < 10)).all()
        for key, width, dtype in (("gt_bboxes", 4, torch.float32), ("centers2d", 2, torch.float32)):
            assert (
                all(t.dtype == dtype and t.shape[1:] == (width,) for t in batch[key][b][0])
                and len(batch[key][b][0]) == 6
            )
        counts = [[len(t) for t in batch[k][b][0]] for k in ("gt_bboxes", "gt_labels", "centers2d", "depths")]
        assert counts[0] == counts[1] == counts[2] == counts[3]
        meta = batch["img_metas"][b][0]
        assert set(meta) == {
            "filename",
            "ori_shape",
            "img_shape",
            "pad_shape",
            "scale_factor",
            "img_norm_cfg",
            "scene_token",
        }
        assert meta["ori_shape"] == (225, 400, 3, 6) and meta["img_shape"][0] == (64, 176, 3)
        assert meta["pad_shape"] == [(64, 192, 3)] * 6 and meta["filename"][0].startswith(
            "./data/nuscenes/samples/"
        )


def test_order_and_prev_exists_follow_the_sampler(batches):
    loader, seen = batches
    for it, batch in enumerate(seen):
        indices = [d["index"] for d in batch["dali"]]
        assert indices == loader.sampler.batch(it)
        assert batch["prev_exists"][:, 0].tolist() == [float(loader.sampler.prev_exists(i)) for i in indices]
        assert [m[0]["scene_token"] for m in batch["img_metas"]] == [
            loader.frames[i].scene_token for i in indices
        ]
    # each slot walks forward in time inside a group
    for slot in range(2):
        stamps = [b["timestamp"][slot, 0].item() for b in seen]
        flags = [b["prev_exists"][slot, 0].item() for b in seen]
        for t in range(1, len(seen)):
            assert flags[t] == 0 or stamps[t] > stamps[t - 1]


def test_box_centres_project_onto_centers2d(batches):
    """Each unclipped 2D centre is its own output box's gravity centre through the output lidar2img
    (pixel and depth, one box; boxes within 1 m left out)."""
    checked = 0
    for batch in batches[1]:
        for b in range(2):
            boxes = batch["gt_bboxes_3d"][b][0].numpy().astype(np.float64)
            gravity = boxes[:, :3] + np.c_[np.zeros((len(boxes), 2)), boxes[:, 5] / 2]
            for cam in range(6):
                l2i = batch["lidar2img"][b, 0, cam].numpy().astype(np.float64)
                depths = batch["depths"][b][0][cam].numpy()
                # float32 (tests/float_tolerance.py): the matrix's chain and the boxes' BEV rotation,
                # scale and shift (10, twice for the rotation's mixing of x and y)
                for (u, v), d in zip(batch["centers2d"][b][0][cam].numpy(), depths, strict=True):
                    if 0 < u < 176 and 0 < v < 64:  # not clipped to the canvas
                        checked += (
                            own_box(l2i, gravity, (u, v), float(d), BATCH_LIDAR2IMG_OPS + 2 * 10) is not None
                        )
    assert checked > 20


def test_flip_mirrors_the_camera_matrix(tiny_root):
    with build_loader(tiny_config(), tiny_root, seed=1) as loader:
        plan = loader.planner.plan(0)[0]
        frame = loader.frames[plan.index]
    from dataclasses import replace

    from dali_streampetr.batch.transforms import frame_targets

    a = frame_targets(frame, replace(plan.draw, flip=False), loader.cfg)
    b = frame_targets(frame, replace(plan.draw, flip=True), loader.cfg)
    pts = np.array([[10.0, 2.0, 0.5, 1.0], [15.0, -3.0, 1.0, 1.0]])
    la, lb = (np.asarray(t["lidar2img"][0], dtype=np.float64) for t in (a, b))
    ua, ub = pts @ la.T, pts @ lb.T
    # float32, each side its matrix's chain (tests/float_tolerance.py); the mirror 176 - u is exact
    atol = sum(projection_atol(np.float32, m, pts[:, :3], BATCH_LIDAR2IMG_OPS).max() for m in (la, lb))
    np.testing.assert_allclose(ub[:, 0] / ub[:, 2], 176 - ua[:, 0] / ua[:, 2], rtol=0, atol=atol)
    # exact: the flip changes only the first row of ida K (the others are multiplied by 1, plus 0),
    # and the float32 steps compute every row of the product alike
    np.testing.assert_array_equal(ub[:, 1:], ua[:, 1:])


def test_determinism_and_resume(tiny_root):
    with build_loader(tiny_config(), tiny_root, seed=9) as a:
        first = [next(a) for _ in range(5)]
        state = a.state_dict()
    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=9) as b:
        again = [next(b) for _ in range(3)]
    for x, y in zip(first, again, strict=False):
        assert torch.equal(x["img"], y["img"]) and torch.equal(x["lidar2img"], y["lidar2img"])
    with build_loader(tiny_config(), tiny_root, seed=9) as c:
        c.load_state_dict(state)
        resumed = next(c)
    with build_loader(tiny_config(), tiny_root, seed=9) as d:
        for _ in range(5):
            next(d)
        expected = next(d)
    assert [s["index"] for s in resumed["dali"]] == [s["index"] for s in expected["dali"]]
    assert torch.equal(resumed["img"], expected["img"]) and torch.equal(
        resumed["ego_pose"], expected["ego_pose"]
    )
    with build_loader(tiny_config(), tiny_root, seed=10) as e, pytest.raises(ValueError, match="seed"):
        e.load_state_dict(state)


def test_runner_protocol_and_config(tiny_root):
    with build_loader(tiny_config(), tiny_root, rank=1, world_size=2) as loader:
        assert len(loader) == 12 and iter(loader) is loader
        loader.sampler.set_epoch(3)
        assert loader.sampler.epoch == 3 and loader.sampler.rank == 1
    with pytest.raises(ValueError, match=r"6 sequence groups cannot feed 8 batch slots"):
        build_loader(tiny_config(), tiny_root, rank=0, world_size=4)
    cfg = loader_config_from(tiny_config(replicate_dataset_per_gpu=True, roi_decode=False))
    assert cfg.replicate_dataset_per_gpu and not cfg.roi_decode and cfg.aug.final_dim == (64, 176)
    with pytest.raises(ValueError, match="unknown data_loading_config keys: \\['threads'\\]"):
        loader_config_from(tiny_config(threads=2))
