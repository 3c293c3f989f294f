"""The run's schedule (:mod:`.schedule`) in the training log, once the DALI loader is built."""

from __future__ import annotations

from typing import Any

from mmdet.utils import get_root_logger

from ..loader import DaliStreamLoader
from .schedule import RunSchedule


def log_schedule(cfg: Any, loader: DaliStreamLoader) -> None:
    """Print the data size, world size, batch, mode, iterations per epoch and effective epochs;
    warn when the config's ``num_gpus`` is not the real world size."""
    schedule = RunSchedule(
        frames=len(loader.frames),
        world_size=loader.world_size,
        samples_per_gpu=loader.cfg.samples_per_gpu,
        mode=loader.sampler.mode,
        max_iters=(cfg.get("runner") or {}).get("max_iters"),
        config_num_gpus=cfg.get("num_gpus"),
        config_iters_per_epoch=cfg.get("num_iters_per_epoch"),
    )
    logger = get_root_logger()
    for line in schedule.report():
        logger.info(line)
    warning = schedule.gpu_count_warning()
    if warning:
        logger.warning(warning)
