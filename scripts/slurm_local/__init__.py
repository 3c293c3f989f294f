"""A local single-node SLURM for the SLURM smoke run (`nox -s slurm_smoke`).

- :mod:`.cluster`   ``LocalSlurm``: its ``slurm.conf``, munged, slurmctld and slurmd in a temp folder,
  stopped after (``install=True``: install the programs first; ``LocalSlurm.Unavailable``: why not)
- :mod:`.programs`  the programs it needs: missing ones, whether it can start here, apt-get install
- ``python -m slurm_local install``: that install (``nox -s tests`` runs it), or one line why not
"""

from __future__ import annotations

from .cluster import LocalSlurm

__all__ = ["LocalSlurm"]  # the face: what other packages take
