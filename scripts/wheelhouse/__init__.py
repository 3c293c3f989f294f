"""A wheelhouse for offline installs (``nox -s wheelhouse``; docs/offline.md).

Stdlib only. One folder holds every wheel the hermetic and the OpenMMLab env install (the
mmcv-full and mmdet3d wheels this project builds included, and the mmcv-full sdist), a
hash-pinned lock per env, ``SHA256SUMS``, and the GPU check kit (``gpu-kit/``, scripts/gpukit).

- :mod:`.locks`    resolve from a folder with the index disabled, hash, write and check locks
- :mod:`.collect`  download (and build) the wheels of each env, write its lock
- :mod:`.offline`  use a wheelhouse: verify it, seed the source-built wheels, point pip at it
"""

from __future__ import annotations


class WheelhouseError(Exception):
    """A user-facing failure naming the file, package or step."""
