"""Stack tier: a skipped bad image reaches the runner's log (mmdet's root logger, which the training
runner writes to the console and to <work_dir>/<timestamp>.log)."""

from __future__ import annotations

import logging
import os

import pytest
from loader_data import tiny_config

pytestmark = pytest.mark.stack


def test_skipped_image_is_reported_in_the_mmdet_log(damaged_root, tmp_path):
    pytest.importorskip("mmdet", reason="stack tier: mmdet is not importable in this interpreter")
    from dali_streampetr import build_dali_loader

    log_file = tmp_path / "run.log"
    handler = logging.FileHandler(log_file)
    logging.getLogger("mmdet").addHandler(handler)
    try:
        cfg = tiny_config(on_bad_image="skip")
        loader = build_dali_loader(cfg, data_root=damaged_root, rank=0, world_size=1, seed=3)
        plan = loader.loader.planner.plan(0)[0]
        frame = loader.loader.frames[plan.index]
        os.unlink(frame.img_paths[2])
        next(loader)
        loader.close()
    finally:
        logging.getLogger("mmdet").removeHandler(handler)
        handler.close()
    text = log_file.read_text()
    assert f"sample {frame.token}, camera {frame.cam_names[2]}" in text and "bad images so far: 1" in text
