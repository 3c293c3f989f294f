"""This process's place in the process group, for the DALI loader: rank, world size and DALI device,
and the refusal of an epoch-based mode without a process group. Imports mmcv."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from mmcv.runner import get_dist_info

from ..config.modes import UnsupportedConfigError
from ..config.reader import loader_config_from
from ..pipeline.placement import local_device_id


def get_dali_pipeline_distributed_args(cfg: Any) -> dict[str, int | None]:
    """Rank, world size and DALI device id of this process.

    The real rank and world size are returned in both modes: the loader derives the sampler's
    rank 0 / 1 replica itself when ``data_loading_config.replicate_dataset_per_gpu`` is set, and
    keeps the real rank for its augmentation draws (as upstream's ``worker_init_fn`` does), so the
    ranks of a replicated run still draw different crops and flips. ``device_id`` is the local
    rank when DALI runs on the GPU, else None.
    """
    rank, world_size = get_dist_info()
    device = (cfg.get("data_loading_config", {}) or {}).get("device", "cpu")
    return {"rank": rank, "world_size": world_size, "device_id": local_device_id(device)}


def require_distributed_for(cfg: Any) -> None:
    """Epoch-based modes reproduce upstream's distributed sampler. Without a process group upstream's
    ``build_dataloader`` takes mmdet's ``GroupSampler``, whose order comes from the main process's
    global ``np.random`` (shared with the model's own draws): the loader refuses that case."""
    mode = loader_config_from(cfg).mode
    if mode.epoch_based and not (dist.is_available() and dist.is_initialized()):
        raise UnsupportedConfigError(
            f"the {mode.name.replace('_', '-')} config runs without a process group: upstream then samples "
            "with mmdet's GroupSampler from the main process's np.random, which the DALI loader does not "
            "reproduce; launch distributed, also for one process (tools/dist_train.sh CONFIG 1, or torchrun "
            "--nproc_per_node=1 tools/train.py CONFIG --launcher pytorch), where upstream uses "
            "DistributedGroupSampler"
        )
