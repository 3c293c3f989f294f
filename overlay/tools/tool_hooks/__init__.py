"""The hooks of upstream's ``tools/train.py`` and ``tools/test.py``: what their patches call, through
this package's names (:data:`__all__`): ``from tool_hooks import X``. It lands in ``tools/`` beside
the scripts, whose folder is ``sys.path[0]`` when they run (``tools/tool_hooks/``; a fork's moved
``tools/`` takes it along, ``overlay_moves``).

Each name is imported on first use (PEP 562), so a hook imports only the module that defines it:
:mod:`.driver_check` (refuse a GPU torch cannot use; stdlib only, also a script), :mod:`.dist_init`
(the process group with or without CUDA, from SLURM's variables by :mod:`.slurm_env` under
``--launcher slurm``), :mod:`.loader_choice` (DALI or upstream's loader), :mod:`.checkpoint_probe`
(``--resume-from`` checked, ``--auto-resume`` chosen) and :mod:`.cpu_eval` (``tools/test.py`` on the
CPU).
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
