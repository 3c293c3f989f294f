"""The hooks of upstream's ``tools/train.py`` and ``tools/test.py``: what their patches call, through
this package's names (:data:`__all__`): ``from tool_hooks import X`` (it lands in ``tools/``, the
scripts' ``sys.path[0]``; docs/patches.md). Each name is imported on first use (PEP 562), so a hook
imports only the module that defines it.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module (under this package) that defines it
_EXPORTS = {
    "require_usable_cuda": "driver_check",
    "init_distributed": "dist_init",
    "export_slurm_dist_env": "slurm_env",
    "training_sets": "loader_choice",
    "test_set_and_loader": "loader_choice",
    "check_resume_from": "checkpoint_probe",
    "auto_resume": "checkpoint_probe",
    "evaluate_on_cpu": "cpu_eval",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
