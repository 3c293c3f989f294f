"""CPU time and memory of a process tree, read from Linux ``/proc`` (no psutil needed), and the peak GPU
memory a loader takes (:class:`PeakGpuMemory`, through torch).

CPU seconds of a tree = for every live member ``utime + stime`` (all its threads) plus
``cutime + cstime`` (its reaped children), so a child that exits and is waited for keeps counting.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    cpu_s: float  # utime + stime + cutime + cstime


def _stat_fields(text: str) -> list[str]:
    """The fields after the command name of a ``/proc/<pid>/stat`` (or ``task/<tid>/stat``) text,
    from the state on (the name may contain spaces and ')')."""
    return text[text.rindex(")") + 2 :].split()


def _parse_stat(text: str) -> tuple[int, float]:
    """(ppid, cpu seconds incl. reaped children) from the text of ``/proc/<pid>/stat``."""
    rest = _stat_fields(text)
    ppid = int(rest[1])
    utime, stime, cutime, cstime = (int(v) for v in rest[11:15])
    return ppid, (utime + stime + cutime + cstime) / CLK_TCK


def read_stat(pid: int) -> ProcStat | None:
    try:
        ppid, cpu = _parse_stat((PROC / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None  # gone in the meantime
    return ProcStat(pid, ppid, cpu)


def tree(root: int) -> list[ProcStat]:
    """``root`` and all its live descendants."""
    stats = [s for p in PROC.iterdir() if p.name.isdigit() and (s := read_stat(int(p.name)))]
    children: dict[int, list[ProcStat]] = {}
    by_pid = {s.pid: s for s in stats}
    for s in stats:
        children.setdefault(s.ppid, []).append(s)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in by_pid:
            out.append(by_pid[pid])
        todo.extend(c.pid for c in children.get(pid, ()))
    return out


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system) used so far by ``root`` (default: this process) and its tree."""
    return sum(s.cpu_s for s in tree(os.getpid() if root is None else root))


def thread_cpu_seconds(root: int | None = None) -> dict[tuple[int, int, str], float]:
    """CPU seconds (user + system) of every live thread of ``root``'s tree (default: this
    process), keyed by (pid, thread id, thread name): which thread of the loader does the work
    (DALI names its executor and pool threads)."""
    out = {}
    for proc in tree(os.getpid() if root is None else root):
        for task in (PROC / str(proc.pid) / "task").glob("[0-9]*"):
            try:
                text, name = (task / "stat").read_text(), (task / "comm").read_text().strip()
            except OSError:
                continue  # ended in the meantime
            rest = _stat_fields(text)
            out[(proc.pid, int(task.name), name)] = (int(rest[11]) + int(rest[12])) / CLK_TCK
    return out


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of one process in MiB; PSS splits pages shared between forked workers."""
    try:
        rss = int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0
    pss = rss
    try:
        for line in (PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) / 1024
                break
    except (OSError, ValueError):
        pass
    return rss, pss


class PeakMemory:
    """Background sampler of the tree's summed RSS and PSS; ``peak_rss_mb`` / ``peak_pss_mb``.

    Sampling is not free: reading ``smaps_rollup`` makes the kernel walk a process's page tables
    (~0.3 CPU-s per second of sampling a loader's tree here), and that time is spent in this
    process, inside the tree a :class:`Stopwatch` measures. ``own_cpu_s`` (the sampler's CPU
    seconds so far) is what a stopwatch must leave out: ``Stopwatch(exclude=mem.own_cpu)``."""

    def __init__(self, root: int | None = None, interval_s: float = 0.1) -> None:
        self.root = os.getpid() if root is None else root
        self.interval_s = interval_s
        self.peak_rss_mb = 0.0
        self.peak_pss_mb = 0.0
        self.max_processes = 0
        self.own_cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

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

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> PeakMemory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


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


class PeakGpuMemory:
    """Peak device memory in use (``cudaMemGetInfo``) above what was in use on entry, sampled in a
    thread: DALI's pools, nvJPEG's buffers and the batches torch holds, on ``device``."""

    def __init__(self, device: int, interval_s: float = 0.05) -> None:
        import torch

        self._info = lambda: torch.cuda.mem_get_info(device)
        self.interval_s = interval_s
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-gpu-memory", daemon=True)

    def _used_mb(self) -> float:
        free, total = self._info()
        return (total - free) / 2**20

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak_mb = max(self.peak_mb, self._used_mb() - self._base)

    def __enter__(self) -> PeakGpuMemory:
        self._base = self._used_mb()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._used_mb() - self._base)
