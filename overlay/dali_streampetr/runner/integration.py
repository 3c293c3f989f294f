"""What the patched ``tools/train.py`` calls when a config sets ``use_dali_pipeline=True``:
:func:`build_dali_train_loader` and :func:`get_dali_pipeline_distributed_args`.

Imports mmcv (through :mod:`.mmdet_adapter`), so it is only imported inside the upstream env.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..batch.slot_log import SlotLog
from ..config.reader import loader_config_from
from .checkpoint_check import checkpoint_problem
from .distributed import get_dali_pipeline_distributed_args, require_distributed_for
from .mmdet_adapter import MMDetDaliLoader, build_mmdet_loader, to_collated
from .schedule_log import log_schedule
from .state_hook import DaliStreamStateHook

__all__ = ["build_dali_train_loader", "get_dali_pipeline_distributed_args"]


def build_dali_train_loader(
    cfg: Any, *, rank: int, world_size: int, device_id: int | None
) -> MMDetDaliLoader:
    """The DALI training loader for ``cfg`` (a drop-in for the PyTorch DataLoader of the train set).

    The info file is ``data.train.ann_file`` exactly as given (relative to the working directory,
    as upstream's dataset reads it); images are found under ``data.train.data_root``. It carries
    ``CLASSES`` from the config's ``class_names`` for the checkpoint meta and ``model.CLASSES``,
    ``runner_hooks`` that keep its stream position in checkpoints, and ``checkpoint_problem`` for
    ``--auto-resume``. With ``data_loading_config.log_slots=True`` each rank also writes
    ``<work_dir>/slots_rank<r>.jsonl`` (appended to when the run resumes).
    """
    require_distributed_for(cfg)
    collate = to_collated
    if loader_config_from(cfg).log_slots:
        log_path = Path(cfg.work_dir) / f"slots_rank{rank}.jsonl"
        collate = SlotLog(log_path, rank, append=lambda: bool(cfg.get("resume_from")), then=to_collated)
    train = cfg.data.train
    loader = build_mmdet_loader(
        cfg, train.data_root, rank=rank, world_size=world_size, seed=cfg.get("seed") or 0,
        device_id=device_id, ann_file=train.ann_file, collate=collate,
    )  # fmt: skip
    loader.CLASSES = tuple(cfg.class_names)
    loader.runner_hooks = [(DaliStreamStateHook(loader, cfg), "ABOVE_NORMAL")]
    loader.checkpoint_problem = functools.partial(checkpoint_problem, loader.loader)
    log_schedule(cfg, loader.loader)
    return loader
