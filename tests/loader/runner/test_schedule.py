"""Effective epochs of a run and the warning when the config's GPU count is not the world size."""

from __future__ import annotations

import pytest
from dali_streampetr.runner.schedule import RunSchedule


def test_shard_divides_the_data_between_the_ranks() -> None:
    s = RunSchedule(frames=28130, world_size=8, samples_per_gpu=2, max_iters=42192)
    assert s.iters_per_epoch == 1758.125  # exact: 28130 / 16 is a binary fraction
    assert s.epochs(42192) == pytest.approx(23.998, abs=5e-4)  # 23.9983: the report's 3 decimals
    assert "this run: 42192 iterations = 23.998 epochs" in s.report()


def test_replicate_walks_the_whole_data_set_on_every_rank() -> None:
    s = RunSchedule(frames=100, world_size=4, samples_per_gpu=2, replicate=True, max_iters=100)
    assert s.iters_per_epoch == 50 and s.epochs(100) == 2
    assert "every rank walks the whole data set" in s.report()[0]


def test_warns_when_the_configs_gpu_count_is_not_the_world_size() -> None:
    s = RunSchedule(
        frames=28130,
        world_size=2,
        samples_per_gpu=2,
        config_num_gpus=8,
        config_iters_per_epoch=1758,
    )
    warning = s.gpu_count_warning()
    assert "num_gpus=8" in warning and "world size is 2" in warning
    assert "num_iters_per_epoch=1758" in warning and "0.250 real epochs" in warning
    assert "Set num_gpus = 2" in warning


def test_no_warning_when_they_agree_or_the_config_says_nothing() -> None:
    assert RunSchedule(10, 8, 2, config_num_gpus=8).gpu_count_warning() is None
    assert RunSchedule(10, 8, 2).gpu_count_warning() is None
