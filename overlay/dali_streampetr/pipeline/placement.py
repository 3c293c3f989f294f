"""Which GPU a process's DALI pipeline runs on, and the one check that it has one (no mmcv: the GPU
check kit imports it too)."""

from __future__ import annotations

import os

from ..config.checks import ConfigValueError


def local_device_id(device: str) -> int | None:
    """``LOCAL_RANK`` (0 when unset) when DALI runs on the GPU (``device='gpu'``), else None: the
    launcher's local rank is the GPU this process trains on, so the loader's images land there."""
    return int(os.environ.get("LOCAL_RANK", 0)) if device == "gpu" else None


def pipeline_device(device: str, device_id: int | None) -> int | None:
    """The GPU the loader's images land on: ``device_id`` as given (None: host memory); with
    ``device='gpu'`` CUDA must be available in this process (else :class:`ConfigValueError` naming
    the key) and the current CUDA device is the default."""
    if device != "gpu":
        return device_id
    import torch

    if not torch.cuda.is_available():
        raise ConfigValueError(
            "data_loading_config.device='gpu' needs CUDA, but torch.cuda.is_available() is False in this "
            "process (no NVIDIA driver/GPU visible): use data_loading_config.device='cpu'"
        )
    return torch.cuda.current_device() if device_id is None else device_id
