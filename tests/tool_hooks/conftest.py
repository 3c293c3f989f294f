"""The hooks' modules as the tests take them: ``tool_hooks.slurm_env`` (stdlib only)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


@pytest.fixture(scope="session")
def slurm_env() -> ModuleType:
    return importlib.import_module("tool_hooks.slurm_env")
