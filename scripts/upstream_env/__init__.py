"""Build the shared OpenMMLab "upstream" environment (`nox -s upstream_env`).

No third-party imports. The env lives at `.nox/_env/upstream`; source-built wheels (mmcv-full with compiled
ops, mmdet3d from the pinned source) are cached per user under `<cache>/wheels`, so a rebuilt env
or a CI run never compiles twice. `python -m upstream_env build --help` lists the options.
"""

from __future__ import annotations

# the face (no third-party imports, cheap: imported at once); its modules import nothing from here
from .build import BUILD_PREREQS, NO_DEPS, is_current, read_stamp
from .build import build as build_env  # the module `build` stays the submodule
from .claims import claim_env
from .cuda_toolkit import CUOBJDUMP, system_toolkit
from .errors import EnvBuildError
from .mmcv_wheel import SDIST, ensure_mmcv_wheel, sdist
from .mmdet3d_wheel import ensure_mmdet3d_wheel
from .node_torch import (
    NODE_TORCH,
    node_requirements,
    normalise,
    requirement_name,
    with_dali,
    without_node_torch,
)
from .op_set import kept_units
from .paths import ENV_DIR, LOG_FILE, env_python, store_wheel, wheel_cache
from .runlog import BuildLog

__all__ = [
    "BUILD_PREREQS", "CUOBJDUMP", "ENV_DIR", "LOG_FILE", "NODE_TORCH", "NO_DEPS", "SDIST", "BuildLog",
    "EnvBuildError", "build_env", "claim_env", "ensure_mmcv_wheel", "ensure_mmdet3d_wheel", "env_python",
    "is_current", "kept_units", "node_requirements", "normalise", "read_stamp", "requirement_name",
    "sdist", "store_wheel", "system_toolkit", "wheel_cache", "with_dali", "without_node_torch",
]  # fmt: skip
