"""The batch schema (:mod:`dali_streampetr.batch_schema`) holds for real batches of all three
training modes, and its check names what a batch gets wrong."""

from __future__ import annotations

import pytest
import torch
from dali_streampetr import batch_schema as schema
from dali_streampetr.batch_schema import BATCH, LIST_KEYS, STACKED_KEYS, batch_problems, batch_sizes
from dali_streampetr.loader import build_loader
from dali_streampetr.settings import SINGLE_FRAME, SLIDING_WINDOW, STREAMING
from loader_data import tiny_config


def mode_config(mode: str) -> dict:
    cfg = tiny_config(py_num_workers=0)
    if mode == SINGLE_FRAME:
        cfg["data"]["train"].update(seq_mode=False, queue_length=1, filter_empty_gt=True)
    elif mode == SLIDING_WINDOW:
        cfg["data"]["train"].update(seq_mode=False, queue_length=3, random_length=1, num_frame_losses=2,
                                    filter_empty_gt=False)  # fmt: skip
    return cfg


@pytest.fixture(scope="module")
def batches(tiny_root) -> dict[str, tuple[list[dict], dict[str, int]]]:
    """Two batches of each training mode, with the mode's size symbols."""
    out = {}
    for mode in (STREAMING, SINGLE_FRAME, SLIDING_WINDOW):
        with build_loader(mode_config(mode), tiny_root, rank=0, world_size=1, seed=5) as loader:
            assert loader.cfg.mode.name == mode
            out[mode] = ([next(loader) for _ in range(2)], batch_sizes(loader.cfg, loader.n_cams))
    return out


@pytest.mark.parametrize("mode", [STREAMING, SINGLE_FRAME, SLIDING_WINDOW])
def test_real_batches_fit_the_schema(batches, mode: str) -> None:
    got, sizes = batches[mode]
    assert sizes["T"] == (3 if mode == SLIDING_WINDOW else 1)
    for batch in got:
        assert batch_problems(batch, sizes) == []


def test_the_schema_lists_every_key_once_in_the_adapters_groups() -> None:
    names = [key.name for key in BATCH]
    assert len(names) == len(set(names))
    assert ("img", "prev_exists", *schema.GEOMETRY_KEYS) == STACKED_KEYS
    assert set(names) == {*STACKED_KEYS, *LIST_KEYS, "img_metas", "dali"}


# Upstream's values, written out here (the pins' StreamPETR configs and Collect3D), not taken from
# the schema under test: every key list the package derives from BATCH must come out as these.
COLLECT3D_KEYS = ("gt_bboxes_3d", "gt_labels_3d", "img", "gt_bboxes", "gt_labels", "centers2d", "depths",
                  "prev_exists", "lidar2img", "intrinsics", "extrinsics", "timestamp", "img_timestamp",
                  "ego_pose", "ego_pose_inv")  # fmt: skip
COLLECT3D_META_KEYS = ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "flip",
                       "box_mode_3d", "box_type_3d", "img_norm_cfg", "scene_token", "gt_bboxes_3d",
                       "gt_labels_3d")  # fmt: skip


def test_every_key_list_derived_from_the_schema_is_upstreams() -> None:
    assert schema.COLLECT3D_KEYS == COLLECT3D_KEYS
    assert ("img_metas", *COLLECT3D_KEYS) == schema.COLLATED_KEYS  # Collect3D: img_metas first
    assert COLLECT3D_KEYS[8:] == schema.GEOMETRY_KEYS  # the configs' collect_keys
    assert COLLECT3D_KEYS[:2] + COLLECT3D_KEYS[3:7] == schema.ANNOTATION_KEYS
    assert (COLLECT3D_KEYS[:2], COLLECT3D_KEYS[3:7]) == (schema.PER_FRAME_KEYS, schema.PER_CAMERA_KEYS)
    assert schema.COLLECT3D_META_KEYS == COLLECT3D_META_KEYS
    assert tuple(k for k in COLLECT3D_META_KEYS if k != "flip") == schema.META_ORDER
    assert schema.META_FIELDS == ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor",
                                  "img_norm_cfg", "scene_token")  # fmt: skip


def test_the_check_names_each_thing_a_broken_batch_gets_wrong(batches) -> None:
    (batch, _), sizes = batches[SLIDING_WINDOW][0], batches[SLIDING_WINDOW][1]
    broken = {k: v for k, v in batch.items() if k != "depths"}
    broken["extra"] = 1
    broken["timestamp"] = batch["timestamp"].float()  # float64 expected
    broken["ego_pose"] = batch["ego_pose"][:, :2]  # T=3 expected
    broken["gt_labels_3d"] = [list(s) for s in batch["gt_labels_3d"]]
    n = len(batch["gt_bboxes_3d"][0][0])
    broken["gt_labels_3d"][0][0] = torch.zeros(n + 1, dtype=torch.int64)  # one label more than boxes
    broken["img_metas"] = [list(s) for s in batch["img_metas"]]
    broken["img_metas"][1] = broken["img_metas"][1][:2]  # a sample with 2 frames of 3
    problems = batch_problems(broken, sizes)
    assert "missing key 'depths'" in problems and "unexpected key 'extra'" in problems
    assert "timestamp: dtype torch.float32, expected torch.float64" in problems
    assert any(p.startswith("ego_pose: shape (2, 2, 4, 4)") for p in problems), problems
    assert any(p.startswith("gt_labels_3d at [0, 0]: shape") for p in problems), problems
    assert "img_metas at [1]: a list of 2, expected a list of T=3" in problems
    assert len(problems) == 6, problems
