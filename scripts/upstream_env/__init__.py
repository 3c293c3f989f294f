"""Build the shared OpenMMLab "upstream" environment (`nox -s upstream_env`).

Stdlib only. The env lives at `.nox/_env/upstream`; source-built wheels (mmcv-full with compiled
ops, mmdet3d from the pinned source) are cached per user under `<cache>/wheels`, so a rebuilt env
or a CI run never compiles twice. `python -m upstream_env build --help` lists the options.
"""

from __future__ import annotations


class EnvBuildError(Exception):
    """A user-facing failure: the message says which step failed and where the full log is."""
