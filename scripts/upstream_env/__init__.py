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


# the face: module of this package -> the names other packages take from it
_FACE = {
    "build": ("BUILD_PREREQS", "NO_DEPS", "is_current", "read_stamp"),
    "cuda_toolkit": ("CUOBJDUMP",),
    "mmcv_wheel": ("SDIST", "ensure_mmcv_wheel", "probe", "sdist"),
    "mmdet3d_wheel": ("ensure_mmdet3d_wheel",),
    "node_torch": (
        "NODE_TORCH",
        "node_requirements",
        "normalise",
        "requirement_name",
        "with_dali",
        "without_node_torch",
    ),
    "paths": ("ENV_DIR", "LOG_FILE", "ROOT", "env_python", "store_wheel", "wheel_cache"),
    "runlog": ("BuildLog",),
}
_EXPORTS = {name: module for module, names in _FACE.items() for name in names}
_RENAMED = {"build_env": ("build", "build")}  # a name the face gives to `build.build`, which the module hides
__all__ = sorted([*_EXPORTS, *_RENAMED, "EnvBuildError"])


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    module, attr = _RENAMED.get(name) or (_EXPORTS.get(name), name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
