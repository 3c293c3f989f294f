"""The Python the envs are built with: the running one where the stack supports it, else one found
on this host (PATH, pyenv, uv), else a refusal in seconds, before any download or compile.

- :mod:`.choice`  ``SUPPORTED``, ``base_python`` (a ``BasePython``), ``UnsupportedPython``,
  ``venv_minor``
"""

from __future__ import annotations

from .choice import SUPPORTED, BasePython, UnsupportedPython, base_python, venv_minor

__all__ = ["SUPPORTED", "BasePython", "UnsupportedPython", "base_python", "venv_minor"]
