"""The Python the envs are built with: the running one where the stack supports it, else one found
on this host (PATH, pyenv, uv), else a refusal in seconds, before any download or compile.

- :mod:`.choice`  ``SUPPORTED``, ``base_python`` (a ``BasePython``), ``UnsupportedPython``,
  ``supported_on_host``, ``venv_minor``
- :mod:`.matrix`  ``python -m interpreter``: `nox -s pythons`, a cold run per supported Python;
  ``HERMETIC_TIER``, the pytest marker expression of the hermetic tier (the noxfile's too)
"""

from __future__ import annotations

from .choice import SUPPORTED, BasePython, UnsupportedPython, base_python, supported_on_host, venv_minor
from .matrix import HERMETIC_TIER

__all__ = [
    "HERMETIC_TIER",
    "SUPPORTED",
    "BasePython",
    "UnsupportedPython",
    "base_python",
    "supported_on_host",
    "venv_minor",
]
