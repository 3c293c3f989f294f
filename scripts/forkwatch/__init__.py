"""Watch upstream and its forks: the series checked against each source (`watch`), and a candidate
commit vetted end to end in a throw-away copy of the project (`vet`: rebase, apply, config loads,
one DALI training iteration).

Stdlib only: nox's python runs it; the training and config steps run in the OpenMMLab env.
"""

from __future__ import annotations

from .errors import ForkwatchError

__all__ = ["ForkwatchError"]
