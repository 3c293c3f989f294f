"""``python -m node_rehearsal`` (``nox -s node_rehearsal``): the lent GPU node's one run,
rehearsed on this host with the node's own software, so that run can fail only for GPU reasons.

The stand-in for the node is made of real parts: a CPython of the node's minor (found on this host:
PATH, pyenv, uv), a base venv holding the node's torch, torchvision and numpy from the package index
(``requirements/node-standin.txt``), and an nvcc of the node's CUDA release (the host's, else the kit
carries the toolkit: the sequence of a node without nvcc). The stack kit is made exactly as
docs/gpu.md says, then every call of its sequence runs in order in a folder that stands in for the
lent machine's checkout: each call first puts its ``carry`` folders there, then runs its command with
``bash``, the index and pip config disabled and the proxies unreachable, ``python3`` being the
stand-in's. The rehearsal adds ``--cuda-ops`` (the mmcv step compiles the CUDA op set for the node's
arch although torch sees no GPU here) and, in the last call, ``--quick`` options.

Then it checks what only the GPU could not show here (the env's torch is the stand-in's, mmcv's ops
are CUDA ops of nvcc 13.0 with a cubin for the arch, the loader's numpy is the kit's), and writes
``<out>/rehearsal.json`` and ``rehearsal.md``: each step's seconds and CPU-seconds and the device
budget they imply on the node's cores.

- :mod:`.rehearsal`  the stand-in node, docs/gpu.md's call sequence, the checks of the build, the budget
  and the report
- ``__main__``       the run, call by call, and what it writes

A command-line package: it names nothing for others. It reaches the kit makers through their command
line (``python -m gpu_kits --only stack-kit``), the env builder through its face.
"""
