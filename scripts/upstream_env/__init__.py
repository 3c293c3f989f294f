"""Build the shared OpenMMLab "upstream" environment (`nox -s upstream_env`).

No third-party imports. The env lives at `.nox/_env/upstream`; source-built wheels (mmcv-full with compiled
ops, mmdet3d from the pinned source) are cached per user under `<cache>/wheels`, so a rebuilt env
or a CI run never compiles twice. `python -m upstream_env build --help` lists the options.
"""

from __future__ import annotations

# the face (no third-party imports, cheap: imported at once); its modules import nothing from here
from .build import NO_DEPS
from .claims import claim_env
from .cuda_toolkit import system_toolkit
from .errors import EnvBuildError
from .node_torch import NodeTorch, normalise, read_pins
from .paths import env_python
from .source_built import SourceBuilt

__all__ = [
    "NO_DEPS", "EnvBuildError", "NodeTorch", "SourceBuilt", "claim_env", "env_python",
    "normalise", "read_pins", "system_toolkit",
]  # fmt: skip
