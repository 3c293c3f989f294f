"""Which GPU a process's DALI pipeline runs on (no mmcv: the GPU check kit imports it too)."""

from __future__ import annotations

import os


def local_device_id(device: str) -> int | None:
    """``LOCAL_RANK`` (0 when unset) when DALI runs on the GPU (``device='gpu'``), else None: the
    launcher's local rank is the GPU this process trains on, so the loader's images land there."""
    return int(os.environ.get("LOCAL_RANK", 0)) if device == "gpu" else None
