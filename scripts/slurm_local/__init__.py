"""A local single-node SLURM for the SLURM smoke run (`nox -s slurm_smoke`).

- :mod:`.cluster`   ``LocalSlurm``: start munged, slurmctld and slurmd in a temp folder, stop them after
- :mod:`.conf`      its ``slurm.conf``
- :mod:`.programs`  the programs it needs: missing ones, whether it can start here, apt-get install
- ``python -m slurm_local install``: that install (``nox -s tests`` runs it), or one line why not
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module of this package that defines it ("module:name" where the face renames it)
_EXPORTS = {
    "LocalSlurm": "cluster",
    "SlurmUnavailable": "programs",
    "ensure_installed": "programs",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value
