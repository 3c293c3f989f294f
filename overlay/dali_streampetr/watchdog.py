"""A deadline and worker liveness for ``pipe.run()``.

DALI's parallel external source does not notice a worker process that was killed (what an
out-of-memory kill looks like): the main process blocks for ever on the shared task queue. The
watchdog runs ``pipe.run()`` on its own daemon thread and waits for it in short slices, checking
the worker processes' exit codes between slices; a dead worker or no batch within the deadline
raises at once. A run that never returns leaves its thread (and pipeline) behind: nothing can
unblock it, and the loader builds a new pipeline.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from typing import Any


class LoaderFaultError(RuntimeError):
    """The DALI pipeline can no longer deliver this batch (dead worker, stall)."""


class WorkerDiedError(LoaderFaultError):
    """A DALI python worker process exited while the loader still needed it."""


class PipelineStalledError(LoaderFaultError):
    """No batch within ``data_loading_config.batch_timeout_s``."""


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


class PipelineWatchdog:
    """``run()`` = ``pipe.run()`` with a deadline and worker liveness checks."""

    def __init__(self, pipe: Any, timeout_s: float, poll_s: float = 0.05) -> None:
        self.pipe, self.timeout_s, self.poll_s = pipe, timeout_s, poll_s
        self._requests: queue.Queue = queue.Queue()
        self._results: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="dali-pipeline-run", daemon=True)
        self._thread.start()
        self.stuck = False

    def _serve(self) -> None:
        while self._requests.get():
            try:
                self._results.put((True, self.pipe.run()))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                self._results.put((False, exc))

    def run(self, iteration: int) -> Any:
        """The pipeline's next outputs; :class:`WorkerDiedError` / :class:`PipelineStalledError`
        when a worker is dead or nothing came within the deadline; the pipeline's own error as is."""
        if self.stuck:
            raise RuntimeError("this pipeline is stuck in a previous run; build a new one")
        dead = dead_workers(self.pipe)
        if dead:
            raise worker_died_error(self.pipe, iteration, dead)
        self._requests.put(True)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                ok, value = self._results.get(timeout=self.poll_s)
            except queue.Empty:
                dead = dead_workers(self.pipe)
                if dead:
                    self.stuck = True
                    raise worker_died_error(self.pipe, iteration, dead) from None
                if time.monotonic() > deadline:
                    self.stuck = True
                    raise PipelineStalledError(self._stall_message(iteration)) from None
                continue
            if ok:
                return value
            dead = dead_workers(self.pipe)  # DALI's own "receiving interrupted" after a death
            if dead:
                raise worker_died_error(self.pipe, iteration, dead) from value
            raise value

    def _stall_message(self, iteration: int) -> str:
        alive = [p.pid for p in worker_processes(self.pipe)]
        workers = f"worker process(es) {alive} alive" if alive else "no worker processes (py_num_workers=0)"
        return (
            f"no batch from the DALI pipeline for iteration {iteration} within "
            f"data_loading_config.batch_timeout_s={self.timeout_s:g} s ({workers}). A hung file system "
            "read or an overloaded host stalls it: check the storage, raise batch_timeout_s if batches are "
            "legitimately this slow, or try data_loading_config.py_num_workers=0. The next next() rebuilds "
            f"the pipeline at iteration {iteration}."
        )

    def stop(self) -> None:
        """End the run thread (only when it is not stuck inside the pipeline)."""
        if not self.stuck:
            self._requests.put(False)
