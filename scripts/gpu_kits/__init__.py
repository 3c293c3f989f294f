"""The GPU kits (``nox -s gpu_kits``; docs/gpu.md): the GPU check kit (``<wheelhouse>/gpu-kit``) and
the stack kit (``--only stack-kit``), made from wheels collected into a wheelhouse folder.

- ``__main__``               ``python -m gpu_kits``: make the kits, print what they hold
- :mod:`.kit_folder`         the GPU check kit: its folder, parts and manifest; its wheels, a lock per
  Python; the project's files it runs, in one archive; the stack kit's applied tree with digests
- :mod:`.gpu_check`          ``nox -s gpu_check``: make the kit here, then run it as a node does
- :mod:`.stack_kit`, :mod:`.stack_wheels`  the stack kit: its bundles and manifest; the OpenMMLab
  env's wheels but the node's torch

A command-line package: it names nothing for others. It fills its folder with a ``wheelhouse.Wheelhouse``
and copies the kit's node side (``gpukit``) into each kit; ``node_rehearsal`` runs its command line.
"""
