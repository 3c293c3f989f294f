"""CPU and memory accounting of a process tree (Linux /proc)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from loaderbench import proctree

# Float checks: pytest.approx's default (relative 1e-6) on float64 results of a few operations
# on exact inputs, which are within a few eps (2.2e-16) of the decimals written here.

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_parse_stat_survives_odd_command_names():
    fields = " ".join(["S", "42"] + ["0"] * 9 + ["100", "50", "30", "20"] + ["0"] * 30)
    ppid, cpu = proctree._parse_stat(f"123 (a) b (c)) {fields}")
    assert ppid == 42
    assert cpu == pytest.approx(200 / proctree.CLK_TCK)


def test_live_child_cpu_counts():
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.4) + "time.sleep(30)"])
    try:
        before = proctree.tree_cpu_seconds()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            live = [s for s in proctree.tree(proctree.os.getpid()) if s.pid == child.pid]
            if live and live[0].cpu_s >= 0.4:
                break
            time.sleep(0.05)
        assert child.pid in {s.pid for s in proctree.tree(proctree.os.getpid())}
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
