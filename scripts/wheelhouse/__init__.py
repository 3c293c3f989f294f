"""A wheelhouse for offline installs (``nox -s wheelhouse``; docs/offline.md).

No third-party imports. One folder holds every wheel the hermetic and the OpenMMLab env install (the
mmcv-full and mmdet3d wheels this project builds included, and the mmcv-full sdist), a
hash-pinned lock per env, ``SHA256SUMS``, and the GPU check kit (``gpu-kit/``, scripts/gpukit).

- :mod:`.requirement_locks`  resolve from a folder with the index disabled, write and check the
  hash-pinned requirement locks and ``SHA256SUMS``
- :mod:`.collect`            download (and build) the wheels of each env, write its lock
- :mod:`.offline`            use a wheelhouse: verify it, seed the source-built wheels, point pip at it
- :mod:`.kit_folder`, :mod:`.kit_wheels`, :mod:`.kit_sources`  the GPU check kit (``gpu-kit/``): its folder,
  parts and manifest; its wheels, a lock per Python; the project's files it runs, in one archive
- :mod:`.gpu_check`          ``nox -s gpu_check``: make the kit here, then run it as a node does
- :mod:`.stack_kit`, :mod:`.stack_wheels`, :mod:`.kit_applied`  the stack kit (``--only stack-kit``): its
  bundles and manifest; the OpenMMLab env's wheels but the node's torch; the applied tree with digests
- :mod:`.node_env`           on the node: the OpenMMLab env on the node's torch from a stack kit's wheels

It imports the kit's node side (``gpukit``), which imports nothing of it; ``node_rehearsal`` runs its
command line and reads its locks (``read_lock``).
"""

from __future__ import annotations

# the face (no third-party imports, cheap: imported at once): what other packages and the noxfile take;
# its modules import nothing from here
from .errors import WheelhouseError
from .offline import activate
from .requirement_locks import read_lock

__all__ = ["WheelhouseError", "activate", "read_lock"]
