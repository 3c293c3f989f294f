"""The pipeline's python worker processes: which they are, which have died and how, and the error
that says so."""

from __future__ import annotations

import signal
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
