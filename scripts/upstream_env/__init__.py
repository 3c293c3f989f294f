"""Build the shared OpenMMLab "upstream" environment (`nox -s upstream_env`).

No third-party imports. The env lives at `.nox/_env/upstream`; source-built wheels (mmcv-full with compiled
ops, mmdet3d from the pinned source) are cached per user under `<cache>/wheels`, so a rebuilt env
or a CI run never compiles twice. `python -m upstream_env build --help` lists the options.
"""

from __future__ import annotations


class EnvBuildError(Exception):
    """A user-facing failure: the message says which step failed and where the full log is."""


# the face (no third-party imports, cheap: imported at once, after EnvBuildError, which the modules import)
from .build import BUILD_PREREQS, NO_DEPS, is_current, read_stamp  # noqa: E402
from .build import build as build_env  # noqa: E402  (the module `build` stays the submodule)
from .claims import claim_env  # noqa: E402
from .cuda_toolkit import CUOBJDUMP, system_toolkit  # noqa: E402
from .mmcv_wheel import SDIST, ensure_mmcv_wheel, probe, sdist  # noqa: E402
from .mmdet3d_wheel import ensure_mmdet3d_wheel  # noqa: E402
from .node_torch import (  # noqa: E402
    NODE_TORCH,
    node_requirements,
    normalise,
    requirement_name,
    with_dali,
    without_node_torch,
)
from .op_set import kept_units  # noqa: E402
from .paths import ENV_DIR, LOG_FILE, ROOT, env_python, store_wheel, wheel_cache  # noqa: E402
from .runlog import BuildLog  # noqa: E402

__all__ = [
    "BUILD_PREREQS", "CUOBJDUMP", "ENV_DIR", "LOG_FILE", "NODE_TORCH", "NO_DEPS", "ROOT", "SDIST", "BuildLog",
    "EnvBuildError", "build_env", "claim_env", "ensure_mmcv_wheel", "ensure_mmdet3d_wheel", "env_python",
    "is_current", "kept_units", "node_requirements", "normalise", "probe", "read_stamp", "requirement_name",
    "sdist", "store_wheel", "system_toolkit", "wheel_cache", "with_dali", "without_node_torch",
]  # fmt: skip
