"""CPU and memory accounting of a process tree (psutil; thread names from Linux /proc)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loaderbench.measure import proctree

# Float checks: pytest.approx's default (relative 1e-6) on float64 results of a few operations
# on exact inputs, which are within a few eps (2.2e-16) of the decimals written here.

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

TICK = 1 / os.sysconf("SC_CLK_TCK")  # the kernel counts CPU time in clock ticks
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_live_child_cpu_counts():
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.4) + "time.sleep(30)"])
    try:
        before = proctree.tree_cpu_seconds()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            live = [s for s in proctree.tree(os.getpid()) if s.pid == child.pid]
            if live and proctree.cpu_seconds(live[0]) >= 0.4:
                break
            time.sleep(0.05)
        assert child.pid in {s.pid for s in proctree.tree(os.getpid())}
        assert proctree.tree_cpu_seconds() - before >= 0.2
    finally:
        child.kill()
        child.wait()


def test_reaped_child_cpu_is_kept():
    with proctree.Stopwatch() as sw:
        subprocess.run([sys.executable, "-c", BURN.format(s=0.3)], check=True)
    assert sw.span.cpu_s >= 0.25  # the exited child's time moved to our cutime/cstime
    assert sw.span.wall_s > 0


def test_peak_memory_sees_a_child():
    code = "import time\nb = bytearray(150 * 2**20)\nb[::4096] = b'x' * len(b[::4096])\ntime.sleep(1.0)\n"
    with proctree.PeakMemory(interval_s=0.05) as mem:
        base = mem.peak_rss_mb
        subprocess.run([sys.executable, "-c", code], check=True)
    assert mem.peak_rss_mb >= base + 100
    assert mem.peak_pss_mb > 0
    assert mem.max_processes >= 2


class CostlySampler(proctree.PeakMemory):
    """A memory sampler whose every sample burns 20 ms of CPU (as smaps_rollup of a big tree does);
    ``costs``: what each sample cost, in order."""

    def __init__(self, interval_s: float) -> None:
        super().__init__(interval_s=interval_s)
        self.costs: list[float] = []

    def read(self) -> None:
        t = time.thread_time()
        while time.thread_time() - t < 0.02:
            pass
        super().read()

    def sample(self) -> None:
        before = self.own_cpu_s
        super().sample()
        self.costs.append(self.own_cpu_s - before)


def test_the_memory_samplers_own_cpu_is_left_out_of_the_stopwatch():
    """Over an idle second the sampler burns ~0.2 CPU-s (10 samples of 20 ms; fewer on a busy host):
    the stopwatch that excludes its count sees almost nothing, the plain one sees the samples taken
    while it ran, all but the entry and exit ones (the check's wrong input)."""
    mem = CostlySampler(interval_s=0.1)
    with mem, proctree.Stopwatch(exclude=mem.own_cpu) as excluded, proctree.Stopwatch() as plain:
        time.sleep(1.0)
    inside = sum(mem.costs[1:-1])
    assert inside >= 0.1  # five samples or more while the stopwatches ran: above the bound below
    assert plain.span.cpu_s >= inside - 3 * TICK
    assert excluded.span.cpu_s <= 0.03 + 3 * TICK


def test_thread_cpu_is_split_by_thread_and_process():
    """A busy named thread of this process and a busy child each show their own CPU time, and the
    split of two snapshots names them ``main:<name>`` and ``child:<name>``; an idle one shows ~0."""
    import threading

    from loaderbench.analysis.cpu_split import split

    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.4) + "time.sleep(30)"])
    done = threading.Event()

    def burn(name: str, seconds: float) -> None:
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(name)
        t = time.thread_time()
        while time.thread_time() - t < seconds:
            pass
        done.wait()

    before = proctree.thread_cpu_seconds()
    busy = threading.Thread(target=burn, args=("busy-one", 0.3))
    idle = threading.Thread(target=burn, args=("idle-one", 0.0))
    try:
        busy.start(), idle.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            per = split(before, proctree.thread_cpu_seconds(), os.getpid())
            if per.get("main:busy-one", 0) >= 0.3 - 2 * TICK and per.get("child:python", 0) >= 0.4:
                break
            time.sleep(0.05)
        assert per["main:busy-one"] >= 0.3 - 2 * TICK
        assert per["main:idle-one"] <= 0.1
        assert per["child:python"] >= 0.4 - 2 * TICK
    finally:
        done.set()
        busy.join(), idle.join()
        child.kill()
        child.wait()
