"""The loader's worker processes end themselves when the process that owns the loader dies.

A DALI python worker whose loader process is killed (SIGKILL by the out-of-memory killer or a
scheduler, a crash through ``os._exit``) is re-parented and would wait for tasks for ever, holding
its memory. Every worker therefore runs a daemon thread that checks its parent pid every
``POLL_S`` and exits the worker (``os._exit(EXIT_CODE)``) once it is not the loader's process any
more. The PyTorch DataLoader's workers do the same (they poll their parent's pid too).

``PR_SET_PDEATHSIG`` is not used: it fires when the *thread* that forked exits, and the loader
may be built on a thread that ends long before the loader does.

Forked workers (the default) start the thread in an ``os.register_at_fork`` handler that is armed
only while the loader builds its pipeline (:func:`forking_workers`); spawned workers (once CUDA is
initialised) start it when their callback is unpickled (:func:`watch_owner`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

POLL_S = 0.25
EXIT_CODE = 75  # a worker that ended itself because its loader process died

_owner_while_forking: int | None = None  # the loader's pid while it forks its workers


def watch_owner(owner_pid: int) -> None:
    """In a worker process: end this process as soon as ``owner_pid`` is no longer its parent."""
    if os.getpid() == owner_pid:  # unpickled in the loader's own process: nothing to watch
        return
    if os.getppid() != owner_pid:
        os._exit(EXIT_CODE)

    def watch() -> None:
        while os.getppid() == owner_pid:
            time.sleep(POLL_S)
        os._exit(EXIT_CODE)

    threading.Thread(target=watch, name="dali-owner-watch", daemon=True).start()


def _after_fork_in_child() -> None:
    global _owner_while_forking
    owner, _owner_while_forking = _owner_while_forking, None
    if owner is not None:
        watch_owner(owner)


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def forking_workers() -> Iterator[None]:
    """Every process forked inside this block watches this process and ends when it dies."""
    global _owner_while_forking
    _owner_while_forking = os.getpid()
    try:
        yield
    finally:
        _owner_while_forking = None
