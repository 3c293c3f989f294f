"""Test-only fault injection: the writers call `kill_point(step)` after every step that writes.

`STREAMPETR_DALI_TEST_KILL_AT=<step>` makes the process SIGKILL itself right after that step (a
real, uncatchable kill: no `finally`, no atexit), so the tests can prove that a rerun converges.
`STREAMPETR_DALI_TEST_TRACE=<file>` appends every step name to `<file>`, so the tests can check
that they cover every step. Both are unset in normal use, where this costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

KILL_AT = "STREAMPETR_DALI_TEST_KILL_AT"
TRACE = "STREAMPETR_DALI_TEST_TRACE"


def kill_point(step: str) -> None:
    """Record `step` (with the trace hook) and die here when the kill hook names it."""
    if trace := os.environ.get(TRACE):
        with open(trace, "a", encoding="utf-8") as f:
            f.write(step + "\n")
    if os.environ.get(KILL_AT) == step:
        os.kill(os.getpid(), signal.SIGKILL)
