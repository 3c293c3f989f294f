"""A wheelhouse for offline installs (``nox -s wheelhouse``; docs/offline.md).

No third-party imports. One folder holds every wheel the hermetic and the OpenMMLab env install (the
mmcv-full and mmdet3d wheels this project builds included, and the mmcv-full sdist), a
hash-pinned lock per env and ``SHA256SUMS``.

- :mod:`.requirement_locks`  resolve from a folder with the index disabled, write and check the
  hash-pinned requirement locks and ``SHA256SUMS``
- :mod:`.collect`            fill a folder (:class:`Wheelhouse`); collect each env's wheels, lock them
- :mod:`.offline`            use a wheelhouse: verify it, seed the source-built wheels, point pip at it
- :mod:`.node_env`           on the node: the OpenMMLab env on the node's torch from a stack kit's wheels

It imports the kit's node side (``gpukit``) for ``node_env``; ``gpu_kits`` fills the GPU kits'
folders with a ``Wheelhouse``; pins are read with the env builder's ``read_pins``.
"""

from __future__ import annotations

# the face (no third-party imports, cheap: imported at once): what other packages and the noxfile take;
# its modules import nothing from here
from .collect import Wheelhouse
from .offline import activate
from .requirement_locks import WheelhouseError

__all__ = ["Wheelhouse", "WheelhouseError", "activate"]
