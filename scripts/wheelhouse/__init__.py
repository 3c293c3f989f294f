"""A wheelhouse for offline installs (``nox -s wheelhouse``; docs/offline.md): every wheel the hermetic
and the OpenMMLab env install, a hash-pinned lock per env and ``SHA256SUMS``. No third-party imports.

- :mod:`.requirement_locks`  resolve from a folder with the index disabled, the locks and ``SHA256SUMS``
- :mod:`.collect`            fill a folder (:class:`Wheelhouse`); collect each env's wheels, lock them
- :mod:`.offline`            use a wheelhouse: verify it, seed the source-built wheels, point pip at it
- :mod:`.node_env`           on the node: the OpenMMLab env on the node's torch from a stack kit's wheels
"""

from __future__ import annotations

# the face (no third-party imports, cheap: imported at once): what other packages and the noxfile take;
# its modules import nothing from here
from .collect import Wheelhouse
from .offline import activate
from .requirement_locks import WheelhouseError

__all__ = ["Wheelhouse", "WheelhouseError", "activate"]
