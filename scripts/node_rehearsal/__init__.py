"""``python -m node_rehearsal`` (``nox -s node_rehearsal``): the lent GPU node's one run, rehearsed on
this host with the node's own software (its CPython minor, torch and nvcc release), so that run can
fail only for GPU reasons: docs/gpu.md#rehearsed-here-the-lent-nodes-software.

- :mod:`.rehearsal`  the stand-in node, docs/gpu.md's call sequence, the checks of the build, the budget
  and the report
- ``__main__``       the run, call by call, and what it writes

A command-line package: it names nothing for others.
"""
