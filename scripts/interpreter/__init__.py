"""The Python the envs are built with: the running one where the stack supports it, else one found
on this host (PATH, pyenv, uv), else a refusal in seconds, before any download or compile.

- :mod:`.choice`  ``base_python`` (a ``BasePython``: ``$STREAMPETR_PYTHON``, else the running one, else
  one found), ``venv_minor``, ``supported_on_host``, ``other_pythons`` (the distribution's python3 too)
- :mod:`.stamped_venv`  ``ensure_venv``: a venv behind a stamp
- :mod:`.installer`  ``install_command``: the one spelling of the installer for the envs (uv, else
  pip), ``pip_settings``: the package sources pip would use
"""

from __future__ import annotations

from .choice import BasePython, base_python, other_pythons, supported_on_host, venv_minor
from .installer import install_command, pip_settings
from .stamped_venv import ensure_venv

__all__ = [
    "BasePython",
    "base_python",
    "ensure_venv",
    "install_command",
    "other_pythons",
    "pip_settings",
    "supported_on_host",
    "venv_minor",
]
