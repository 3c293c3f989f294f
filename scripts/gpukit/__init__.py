"""The GPU check kit: the GPU tier and a GPU loader benchmark on a bare CUDA node, offline.

- :mod:`.launcher`    the kit's ``gpu_check.py``: runs :mod:`.runner` from the kit folder
- :mod:`.runner`      the check's steps in order (stdlib only, like the three below): the node, the
  parts, a venv from the kit's wheels reusing the node's torch, the data, ``tests/gpu``, the benchmark
- :mod:`.parts`       the manifest: verify every part, reassemble the files, unpack the sources
- :mod:`.node`        the node's python and torch, and the kit's venv on them
- :mod:`.steps`       numbered steps, the commands they run, ``CheckError``
- :mod:`.plugin`      the pytest plugin the runner loads instead of ``tests/conftest.py``
- :mod:`.build`       ``nox -s wheelhouse`` side: the kit folder, its parts and manifest
- :mod:`.kit_wheels`  the kit's wheels, a lock per Python
- :mod:`.sources`     the project's files the check runs, in a byte-stable archive
"""
