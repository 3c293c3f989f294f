"""The overlay's tools/tool_hooks/slurm_env.py, loaded from its file (stdlib only)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

MODULE = Path(__file__).resolve().parents[2] / "overlay" / "tools" / "tool_hooks" / "slurm_env.py"


def load_slurm_env() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slurm_env", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def slurm_env() -> ModuleType:
    return load_slurm_env()
