"""``pipe.run()`` one iteration ahead of the training thread, with a deadline and worker liveness.

The batch the training thread asks for next is run and assembled on the watchdog's thread while
the model trains on the current one, so that ``next()`` only takes a ready batch.

DALI's parallel external source does not notice a worker process that was killed (what an
out-of-memory kill looks like): the main process blocks for ever on the shared task queue. The
watchdog runs ``pipe.run()`` on its own daemon thread and waits for it in short slices, checking
the worker processes' exit codes between slices; a dead worker or no batch within the deadline
raises at once. A run that never returns leaves its thread (and pipeline) behind: nothing can
unblock it, and the loader builds a new pipeline.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .errors import LoaderFaultError, PipelineStalledError
from .workers import dead_workers, worker_died_error, worker_processes

# Delay between a hand-over and the start of the next run (see PipelineWatchdog).
HANDOVER_GRACE_S = 0.002


RUN_STAGE = "pipe.run(): reading, decoding and resizing the images"
ASSEMBLY_STAGE = "assembling the batch from the pipeline's outputs"


class AssemblyError(RuntimeError):
    """Turning the pipeline's outputs into a batch failed (``error`` is what was raised)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class PipelineWatchdog:
    """``pipe.run()`` + ``prepare(outputs, iteration)`` on a thread of their own, one iteration ahead
    of the training thread, with a deadline and worker liveness checks on the wait.

    ``request(i)`` starts iteration ``i`` without waiting (the loader asks for the next batch as soon
    as it hands one over, so it is run and assembled while the model trains); ``run(i)`` takes it,
    requesting it first when nobody did. The deadline counts from when ``run()`` starts waiting.
    The thread starts a requested run ``grace_s`` late: ``pipe.run()`` wakes the pipeline's threads
    and worker, which on a host with few cores would otherwise preempt the training thread (and take
    the GIL) before it has left ``next()``. DALI's own prefetch queue keeps the pipeline busy meanwhile.
    """

    def __init__(
        self,
        pipe: Any,
        timeout_s: float,
        prepare: Callable[[Any, int], Any],
        poll_s: float = 0.05,
        grace_s: float = HANDOVER_GRACE_S,
    ) -> None:
        self.pipe, self.timeout_s, self.poll_s, self.grace_s = pipe, timeout_s, poll_s, grace_s
        self.prepare = prepare
        self._requests: queue.Queue = queue.Queue()
        self._results: queue.Queue = queue.Queue()
        self._pending: int | None = None  # requested, result not taken yet
        self._thread = threading.Thread(target=self._serve, name="dali-pipeline-run", daemon=True)
        self.stuck = False
        self.stage = "waiting for a request"  # what the run thread is doing (named by a stall)
        self._thread.start()

    def _serve(self) -> None:
        while (iteration := self._requests.get()) is not None:
            time.sleep(self.grace_s)
            self.stage = RUN_STAGE
            try:
                outputs = self.pipe.run()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                self.stage = "waiting for a request"
                self._results.put((False, exc))
                continue
            self.stage = ASSEMBLY_STAGE
            try:
                self._results.put((True, self.prepare(outputs, iteration)))
            except BaseException as exc:  # noqa: BLE001
                self._results.put((False, AssemblyError(exc)))
            self.stage = "waiting for a request"
            del outputs  # the batch keeps what it needs; drop the rest before waiting for a request

    def request(self, iteration: int) -> None:
        """Start iteration ``iteration`` now (no-op when one is already requested or the pipe is stuck)."""
        if self._pending is None and not self.stuck:
            self._pending = iteration
            self._requests.put(iteration)

    def run(self, iteration: int) -> Any:
        """The prepared batch of ``iteration``; :class:`WorkerDiedError` / :class:`PipelineStalledError`
        when a worker is dead or nothing came within the deadline; :class:`AssemblyError` when
        ``prepare`` failed; the pipeline's own error as is."""
        if self.stuck:
            raise RuntimeError("this pipeline is stuck in a previous run; build a new one")
        if self._pending is None:
            dead = dead_workers(self.pipe)
            if dead:
                raise worker_died_error(self.pipe, iteration, dead)
            self.request(iteration)
        elif self._pending != iteration:
            raise RuntimeError(f"iteration {self._pending} is running ahead, not {iteration}")
        ok, value = self._wait(iteration, time.monotonic() + self.timeout_s)
        if ok:
            return value
        dead = dead_workers(self.pipe)  # DALI's own "receiving interrupted" after a death
        if dead and not isinstance(value, AssemblyError):
            raise worker_died_error(self.pipe, iteration, dead) from value
        raise value

    def _wait(self, iteration: int, deadline: float) -> tuple[bool, Any]:
        while True:
            try:
                result = self._results.get(timeout=self.poll_s)
            except queue.Empty:
                dead = dead_workers(self.pipe)
                if dead:
                    self.stuck = True
                    raise worker_died_error(self.pipe, iteration, dead) from None
                if time.monotonic() > deadline:
                    self.stuck = True
                    raise PipelineStalledError(self._stall_message(iteration)) from None
                continue
            self._pending = None
            return result

    def _stall_message(self, iteration: int) -> str:
        alive = [p.pid for p in worker_processes(self.pipe)]
        workers = f"worker process(es) {alive} alive" if alive else "no worker processes (py_num_workers=0)"
        return (
            f"no batch from the DALI pipeline for iteration {iteration} within "
            f"data_loading_config.batch_timeout_s={self.timeout_s:g} s (stage: {self.stage}; {workers}; "
            "that run and its thread are abandoned). A hung file system "
            "read or an overloaded host stalls it: check the storage, raise batch_timeout_s if batches are "
            "legitimately this slow, or try data_loading_config.py_num_workers=0. The next next() rebuilds "
            f"the pipeline at iteration {iteration}."
        )

    def settle(self) -> bool:
        """Wait (up to the deadline) for a run-ahead nobody will take, so that the pipeline can be
        closed while no thread is inside it; ``False`` (and stuck) when it did not end in time."""
        if self._pending is not None and not self.stuck:
            try:
                self._wait(self._pending, time.monotonic() + self.timeout_s)
            except LoaderFaultError:
                return False
        return not self.stuck

    def stop(self) -> None:
        """End the run thread (only when it is not stuck inside the pipeline)."""
        if not self.stuck:
            self._requests.put(None)
