"""The pipeline's python worker processes: which they are, which have died and how, the error that
says so, and their lifeline.

The lifeline: the workers end themselves when the process that owns the loader dies. A DALI python
worker whose loader process is killed (SIGKILL by the out-of-memory killer or a scheduler, a crash
through ``os._exit``) is re-parented and would wait for tasks for ever, holding its memory. Every
worker therefore runs a daemon thread that checks its parent pid every ``POLL_S`` and exits the
worker (``os._exit(EXIT_CODE)``) once it is not the loader's process any more. The PyTorch
DataLoader's workers do the same (they poll their parent's pid too). ``PR_SET_PDEATHSIG`` is not
used: it fires when the *thread* that forked exits, and the loader may be built on a thread that
ends long before the loader does.

Forked workers (the default) start the thread in an ``os.register_at_fork`` handler that is armed
only while the loader builds its pipeline (:func:`forking_workers`); spawned workers (once CUDA is
initialised) start it when their callback is unpickled (:func:`watch_owner`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import WorkerDiedError


def worker_processes(pipe: Any) -> list:
    """The ``multiprocessing.Process`` objects of the pipeline's python workers (DALI 2.4:
    ``pipe._py_pool`` is a ``WorkerPool`` whose ``pool`` is a ``ProcPool`` with ``_processes``)."""
    pool = getattr(getattr(pipe, "_py_pool", None), "pool", None)
    return list(getattr(pool, "_processes", None) or [])


def describe_exit(code: int | None) -> str:
    """``exit code 3`` / ``killed by SIGKILL``."""
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def dead_workers(pipe: Any) -> list[tuple[int, int]]:
    """(pid, exit code) of every worker process that has exited."""
    return [
        (p.pid, p.exitcode) for p in worker_processes(pipe) if p.pid is not None and p.exitcode is not None
    ]


def worker_died_error(pipe: Any, iteration: int, dead: list[tuple[int, int]]) -> WorkerDiedError:
    """The error for dead workers: who died, how, and what to try."""
    # DALI stops the other workers when one dies: name the one that did not get SIGTERM first.
    dead = sorted(dead, key=lambda d: d[1] == -signal.SIGTERM)
    who = "; ".join(f"pid {pid} {describe_exit(code)}" for pid, code in dead)
    return WorkerDiedError(
        f"DALI python worker process died while the loader waited for iteration {iteration}: {who} "
        f"(of {len(worker_processes(pipe))} worker(s)). A SIGKILL is usually the out-of-memory killer: "
        "give the job more host memory, lower data_loading_config.prefetch_queue_depth, or set "
        "data_loading_config.py_num_workers=0 (read images in the training process). The next next() "
        f"rebuilds the pipeline at iteration {iteration}."
    )


# -- the lifeline
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
