"""A local single-node SLURM for the SLURM smoke run (`nox -s slurm_smoke`).

- :mod:`.cluster`   ``LocalSlurm``: start munged, slurmctld and slurmd in a temp folder, stop them after
- :mod:`.conf`      its ``slurm.conf``
- :mod:`.programs`  the programs it needs: missing ones, whether it can start here, apt-get install
- ``python -m slurm_local install``: that install (``nox -s tests`` runs it), or one line why not
"""

from __future__ import annotations

import importlib
from typing import Any

# the face: module of this package -> the names other packages take from it
_FACE = {
    "cluster": ("LocalSlurm",),
    "programs": ("SlurmUnavailable", "ensure_installed"),
}
_EXPORTS = {name: module for module, names in _FACE.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
