"""The process group of ``tools/train.py`` and ``tools/test.py`` under a launcher, with or without
CUDA.

With CUDA: mmcv's ``init_dist`` (unchanged). Without it: mmcv 1.6's ``init_dist('pytorch')`` calls
``torch.cuda.set_device(rank % torch.cuda.device_count())``, a ZeroDivisionError without GPUs, and
the configs ask for NCCL; the process group is created with gloo from the launcher's environment
(``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), which under ``--launcher slurm`` is
derived first from SLURM's variables (:mod:`.slurm_env`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from mmcv.runner import init_dist


def init_distributed(launcher: str, dist_params: Mapping[str, Any]) -> None:
    """``init_dist(launcher, **dist_params)`` with CUDA, else a gloo process group (see the module doc)."""
    if torch.cuda.is_available():
        init_dist(launcher, **dist_params)
        return
    if launcher == "slurm":  # srun sets SLURM_*, not env://'s RANK, MASTER_ADDR...
        from .slurm_env import export_slurm_dist_env

        export_slurm_dist_env()
    torch.distributed.init_process_group(backend="gloo")
