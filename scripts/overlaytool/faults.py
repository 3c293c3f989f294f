"""Test-only fault injection: `$STREAMPETR_DALI_TEST_KILL_AT=<step>` SIGKILLs the process right after
that step, `$STREAMPETR_DALI_TEST_TRACE=<file>` appends every step name to the file.
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
