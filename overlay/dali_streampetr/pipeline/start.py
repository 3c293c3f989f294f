"""The pipeline build (which forks and starts the python workers) under a deadline."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from typing import Any

from .errors import PipelineStartError


def build_within(build: Callable[[], Any], timeout_s: float, iteration: int) -> Any:
    """``build()`` (the pipeline build, which forks and starts the python workers) with a deadline.

    The build stays on the calling thread (forking from a helper thread can leave a worker stuck on
    a lock another thread held at the fork). A timer kills the worker processes started meanwhile
    once ``timeout_s`` has passed, which makes DALI's wait for them fail; that failure is raised as
    :class:`PipelineStartError` naming the stage and the key. The build's own errors are raised as is.
    """
    before = set(multiprocessing.active_children())
    state = threading.Lock()
    killed: list[int] = []
    finished = False

    def expire() -> None:
        with state:
            if finished:
                return
            for proc in multiprocessing.active_children():
                if proc not in before and proc.pid not in killed:
                    killed.append(proc.pid)
                    proc.kill()
            if -1 not in killed:
                killed.append(-1)  # expired, even when no worker had started
        again = threading.Timer(0.2, expire)  # a worker forked after the deadline (a loaded host) too
        again.daemon = True
        again.start()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    try:
        pipe = build()
    except BaseException as exc:
        with state:
            finished = True
            expired = bool(killed)
        if expired:
            pids = [pid for pid in killed if pid != -1]
            raise PipelineStartError(
                f"the DALI pipeline for iteration {iteration} was not built within "
                f"data_loading_config.start_timeout_s={timeout_s:g} s (stage: pipeline build and python "
                f"worker start-up; worker process(es) {pids} killed). A worker that hangs while it starts "
                "(a stopped process, a hung file system, no room in /dev/shm) or a host too loaded to start "
                "one looks like this: check the host, raise start_timeout_s if the start is legitimately "
                "this slow, or try data_loading_config.py_num_workers=0. The next next() builds again."
            ) from exc
        raise
    with state:
        finished = True
    timer.cancel()
    return pipe
