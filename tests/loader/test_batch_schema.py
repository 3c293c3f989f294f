"""The batch schema (:mod:`dali_streampetr.batch.schema`) holds for real batches of all three
training modes, and its check names what a batch gets wrong."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_config
from dali_streampetr.batch.schema import BATCH, LIST_KEYS, STACKED_KEYS, batch_problems, batch_sizes
from dali_streampetr.config.modes import COLLECT_KEYS, SINGLE_FRAME, SLIDING_WINDOW, STREAMING
from dali_streampetr.loader import build_loader


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
    assert ("img", "prev_exists", *COLLECT_KEYS) == STACKED_KEYS
    assert set(names) == {*STACKED_KEYS, *LIST_KEYS, "img_metas", "dali"}


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
