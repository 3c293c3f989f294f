"""pytest plugin of the GPU check kit (``-p gpukit.plugin --noconftest``).

The kit runs ``tests/gpu`` without ``tests/conftest.py`` (that one needs the upstream tooling);
this gives the tests the one fixture they use, the data set the runner made.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def synthetic_dataset() -> Path:
    """The synthetic data set of the kit's run (``GPU_CHECK_DATA``)."""
    root = os.environ.get("GPU_CHECK_DATA")
    if not root or not (Path(root) / "nuscenes2d_temporal_infos_train.pkl").is_file():
        pytest.fail(f"GPU_CHECK_DATA={root!r} is not a synthetic data set (run the kit's gpu_check.py)")
    return Path(root)
