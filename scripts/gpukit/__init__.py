"""The GPU check kit: the GPU tier and a GPU loader benchmark on a bare CUDA node, offline.

- :mod:`.runner`  the kit's ``gpu_check.py`` (stdlib only): verify and reassemble the parts, a venv
  from the kit's wheels that reuses the node's torch, the data, ``tests/gpu``, the benchmark
- :mod:`.plugin`  the pytest plugin the runner loads instead of ``tests/conftest.py``
- :mod:`.build`   ``nox -s wheelhouse`` side: the kit's lock per Python, the parts and manifest
"""
