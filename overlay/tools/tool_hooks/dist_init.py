"""The process group of ``tools/train.py`` and ``tools/test.py`` under a launcher: mmcv's ``init_dist``
with CUDA; without it gloo from the launcher's environment (mmcv 1.6's divides by the GPU count), which
under ``--launcher slurm`` :mod:`.slurm_env` derives first from SLURM's variables.
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
