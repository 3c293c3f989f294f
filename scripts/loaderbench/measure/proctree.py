"""CPU time and memory of a process tree (psutil; a member's reaped children keep counting), and the
peak GPU memory a loader takes (:class:`PeakGpuMemory`, through torch)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import psutil


def tree(root: int) -> list[psutil.Process]:
    """``root`` and all its live descendants."""
    try:
        process = psutil.Process(root)
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu_seconds(process: psutil.Process) -> float:
    """User + system seconds of ``process`` and of its reaped children; 0 once it is gone."""
    try:
        t = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return t.user + t.system + t.children_user + t.children_system


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system) used so far by ``root`` (default: this process) and its tree."""
    return sum(cpu_seconds(p) for p in tree(os.getpid() if root is None else root))


def thread_cpu_seconds(root: int | None = None) -> dict[tuple[int, int, str], float]:
    """CPU seconds (user + system) of every live thread of ``root``'s tree (default: this
    process), keyed by (pid, thread id, thread name): which thread of the loader does the work
    (DALI names its executor and pool threads)."""
    out = {}
    for proc in tree(os.getpid() if root is None else root):
        try:
            threads = proc.threads()
        except psutil.NoSuchProcess:
            continue
        for t in threads:
            try:  # psutil has no thread names: the kernel's, as `top -H` shows them
                name = Path(f"/proc/{proc.pid}/task/{t.id}/comm").read_text().strip()
            except OSError:
                continue  # ended in the meantime
            out[(proc.pid, t.id, name)] = t.user_time + t.system_time
    return out


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of one process in MiB; PSS splits pages shared between forked workers."""
    try:
        info = psutil.Process(pid).memory_full_info()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0, 0.0
    return info.rss / 2**20, info.pss / 2**20


class _Sampler:
    """Calls :meth:`sample` on entry, every ``interval_s`` in a daemon thread, and on exit."""

    def __init__(self, name: str, interval_s: float) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> Self:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


class PeakMemory(_Sampler):
    """Background sampler of the tree's summed RSS and PSS; ``peak_rss_mb`` / ``peak_pss_mb``.

    Sampling is not free: reading ``smaps_rollup`` makes the kernel walk a process's page tables
    (~0.3 CPU-s per second of sampling a loader's tree here), and that time is spent in this
    process, inside the tree a :class:`Stopwatch` measures. ``own_cpu_s`` (the sampler's CPU
    seconds so far) is what a stopwatch must leave out: ``Stopwatch(exclude=mem.own_cpu)``."""

    def __init__(self, root: int | None = None, interval_s: float = 0.1) -> None:
        super().__init__("peak-memory", interval_s)
        self.root = os.getpid() if root is None else root
        self.peak_rss_mb = 0.0
        self.peak_pss_mb = 0.0
        self.max_processes = 0
        self.own_cpu_s = 0.0

    def sample(self) -> None:
        t0 = time.thread_time()  # user + system time of the calling thread
        self.read()
        self.own_cpu_s += time.thread_time() - t0

    def read(self) -> None:
        """One sample of the tree's memory (:meth:`sample` also counts what it costs)."""
        members = tree(self.root)
        mems = [memory_mb(s.pid) for s in members]
        self.peak_rss_mb = max(self.peak_rss_mb, sum(m[0] for m in mems))
        self.peak_pss_mb = max(self.peak_pss_mb, sum(m[1] for m in mems))
        self.max_processes = max(self.max_processes, len(members))

    def own_cpu(self) -> float:
        """CPU seconds the sampling has taken so far."""
        return self.own_cpu_s


@dataclass(frozen=True)
class Span:
    wall_s: float
    cpu_s: float


class Stopwatch:
    """Wall time and tree CPU seconds of a ``with`` block, less the CPU seconds ``exclude`` (a
    running count, e.g. :meth:`PeakMemory.own_cpu`) added meanwhile: the measurement's own cost."""

    def __init__(self, exclude: Callable[[], float] | None = None) -> None:
        self.exclude = exclude or (lambda: 0.0)

    def __enter__(self) -> Stopwatch:
        self._ex0, self._cpu0, self._t0 = self.exclude(), tree_cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._t0
        cpu = tree_cpu_seconds() - self._cpu0 - (self.exclude() - self._ex0)
        self.span = Span(wall, cpu)


class PeakGpuMemory(_Sampler):
    """Peak device memory in use (``cudaMemGetInfo``) above what was in use on entry, sampled in a
    thread: DALI's pools, nvJPEG's buffers and the batches torch holds, on ``device``."""

    def __init__(self, device: int, interval_s: float = 0.05) -> None:
        import torch

        super().__init__("peak-gpu-memory", interval_s)
        self._info = lambda: torch.cuda.mem_get_info(device)
        self.peak_mb = 0.0

    def _used_mb(self) -> float:
        free, total = self._info()
        return (total - free) / 2**20

    def sample(self) -> None:
        self.peak_mb = max(self.peak_mb, self._used_mb() - self._base)

    def __enter__(self) -> Self:
        self._base = self._used_mb()
        return super().__enter__()
