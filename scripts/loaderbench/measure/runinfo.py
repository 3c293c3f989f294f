"""What a benchmark run ran on: the machine, its cores and load, the package versions, the arguments."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "torch",
    "nvidia-dali-cuda120",
    "mmcv-full",
    "mmdet",
    "mmdet3d",
    "numpy",
    "pillow",
    "opencv-python",
)


def has_gpu() -> bool:
    """Whether an NVIDIA GPU is here and torch sees it."""
    if not shutil.which("nvidia-smi"):
        return False
    import torch

    return torch.cuda.is_available()


def meta(args: argparse.Namespace, data_root: Path) -> dict[str, Any]:
    """The run's ``meta`` record: date, host, CPU, cores, Python, package versions, data, arguments."""
    versions = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "versions": versions,
        "data_root": str(data_root),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
