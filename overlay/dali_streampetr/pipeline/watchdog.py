"""``pipe.run()`` one iteration ahead of the training thread, with a deadline and worker liveness.

The batch the training thread asks for next is run and assembled on the watchdog's thread while
the model trains on the current one, so that ``next()`` only takes a ready batch.

DALI's parallel external source does not notice a killed worker (an out-of-memory kill): the main
process blocks for ever. So ``pipe.run()`` runs on a daemon thread, waited for in short slices that
check the workers' exit codes: a dead worker or no batch within the deadline raises at once. A run
that never returns leaves its thread and pipeline behind, and the loader builds a new pipeline.

The lifeline: a worker whose loader process dies would be re-parented and wait for ever, holding
its memory. Every worker runs a thread that polls its parent pid every ``POLL_S`` and exits
(``os._exit(EXIT_CODE)``) once it is not the loader's, as PyTorch's DataLoader workers do
(``PR_SET_PDEATHSIG`` fires when the forking *thread* exits, which may be long before the loader).
Forked workers start it from an ``os.register_at_fork`` handler armed only while the pipeline is
built (:func:`forking_workers`), spawned ones when their callback is unpickled (:func:`watch_owner`).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .pipeline_errors import AssemblyError, LoaderFaultError, PipelineStalledError, WorkerDiedError


def worker_processes(pipe: Any) -> list:
    """The ``multiprocessing.Process`` objects of the pipeline's python workers (DALI 2.4:
    ``pipe._py_pool`` is a ``WorkerPool`` whose ``pool`` is a ``ProcPool`` with ``_processes``)."""
    pool = getattr(getattr(pipe, "_py_pool", None), "pool", None)
    return list(getattr(pool, "_processes", None) or [])


def describe_exit(code: int) -> str:
    """``exit code 3`` / ``killed by SIGKILL`` of an exited worker."""
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


# -- the watchdog


# Delay between a hand-over and the start of the next run (see PipelineWatchdog).
HANDOVER_GRACE_S = 0.002


RUN_STAGE = "pipe.run(): reading, decoding and resizing the images"
ASSEMBLY_STAGE = "assembling the batch from the pipeline's outputs"


class PipelineWatchdog:
    """``pipe.run()`` + ``prepare(outputs, iteration)`` on a thread of their own, one iteration ahead.

    ``request(i)`` starts iteration ``i`` without waiting; ``run(i)`` takes it (requesting it first
    when nobody did), the deadline counting from when it starts waiting. A requested run starts
    ``grace_s`` late, so that the pipeline's threads it wakes do not preempt the training thread
    (and take the GIL) on a host with few cores before it has left ``next()``.
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
