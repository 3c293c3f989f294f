"""The GPU check kit: the GPU tier and a GPU loader benchmark on a bare CUDA node, offline.

What runs on the node, stdlib only and importing nothing else of the project (the kit carries these
files alone; ``gpu_kits.kit_folder`` makes the kit and imports from here, never the other way):

- :mod:`.launcher`    the kit's ``gpu_check.py``: runs :mod:`.runner` from the kit folder
- :mod:`.runner`      the check's steps in order (stdlib only, like the three below): the node, the
  parts, a venv from the kit's wheels reusing the node's torch, the data, ``tests/gpu``, the benchmark
- :mod:`.parts`       the manifest: verify every part, reassemble the files, unpack the sources; the
  project's one file hash (``sha256``)
- :mod:`.node`        the node's python and torch, and the kit's venv on them (the probe, and with it the
  ``.pth`` to a node's torch, is the env builder's too: ``upstream_env --torch-from``)
- :mod:`.steps`       numbered steps, the commands they run, ``CheckError``; the project's one step
  timer (``Stopwatch``: wall and CPU seconds, its "done in" line)
- :mod:`.stack`       ``--stack``: the OpenMMLab env on the node's torch from a stack kit, then the GPU
  tests, training on both loaders, evaluation and the benchmark (it runs the project's unpacked sources)
- :mod:`.plugin`      the pytest plugin the runner loads instead of ``tests/conftest.py``
"""

from __future__ import annotations

# the face (stdlib only and cheap: imported at once): the names other packages take from it
from .node import clean_pip_env, probe
from .parts import FORMAT, MANIFEST, sha256, unpack
from .steps import CheckError, Stopwatch

__all__ = [
    "FORMAT",
    "MANIFEST",
    "CheckError",
    "Stopwatch",
    "clean_pip_env",
    "probe",
    "sha256",
    "unpack",
]
