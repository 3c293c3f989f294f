"""Build the shared OpenMMLab "upstream" environment (`nox -s upstream_env`).

Stdlib only. The env lives at `.nox/_env/upstream`; source-built wheels (mmcv-full with compiled
ops, mmdet3d from the pinned source) are cached per user under `<cache>/wheels`, so a rebuilt env
or a CI run never compiles twice. `python -m upstream_env build --help` lists the options.
"""

from __future__ import annotations

import importlib
from typing import Any


class EnvBuildError(Exception):
    """A user-facing failure: the message says which step failed and where the full log is."""


# name -> the module of this package that defines it ("module:name" where the face renames it)
_EXPORTS = {
    "BUILD_PREREQS": "build",
    "NO_DEPS": "build",
    "is_current": "build",
    "read_stamp": "build",
    "build_env": "build:build",
    "CUOBJDUMP": "cuda_toolkit",
    "SDIST": "mmcv_wheel",
    "ensure_mmcv_wheel": "mmcv_wheel",
    "probe": "mmcv_wheel",
    "sdist": "mmcv_wheel",
    "ensure_mmdet3d_wheel": "mmdet3d_wheel",
    "NODE_TORCH": "node_torch",
    "node_requirements": "node_torch",
    "normalise": "node_torch",
    "requirement_name": "node_torch",
    "with_dali": "node_torch",
    "without_node_torch": "node_torch",
    "ENV_DIR": "paths",
    "LOG_FILE": "paths",
    "ROOT": "paths",
    "env_python": "paths",
    "store_wheel": "paths",
    "wheel_cache": "paths",
    "BuildLog": "runlog",
}
__all__ = sorted([*_EXPORTS, "EnvBuildError"])


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value
