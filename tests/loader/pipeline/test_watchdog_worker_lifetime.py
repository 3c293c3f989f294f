"""The loader's worker processes do not outlive the process that owns the loader, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

LOADER_DIR = Path(__file__).resolve().parents[1]  # the helper modules (loader_data)
REPO_ROOT = LOADER_DIR.parents[1]

# The owner builds its loader on a thread that ends at once (PR_SET_PDEATHSIG would fire there),
# trains on from the main thread, prints its workers' pids and waits to be killed.
OWNER = textwrap.dedent(
    """
    import sys, threading, time
    from loader_data import tiny_config
    from dali_streampetr.loader import build_loader

    holder = {}

    def build():
        holder["loader"] = loader = build_loader(tiny_config(py_num_workers=2), sys.argv[1], seed=3)
        next(loader)

    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    loader = holder["loader"]
    for _ in range(3):
        next(loader)
    print(" ".join(map(str, loader.worker_pids())), flush=True)
    if sys.argv[2] == "exit":
        import os
        os._exit(3)
    time.sleep(600)
    """
)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper has ended and holds no memory)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("death", ["sigkill", "os_exit"])
def test_workers_end_within_seconds_when_the_loader_process_dies(tiny_root, death):
    """SIGKILL of (or os._exit in) a process that owns a running loader with 2 forked workers:
    no worker is alive 5 s later."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADER_DIR), str(REPO_ROOT / "overlay")])}
    how = "exit" if death == "os_exit" else "wait"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tiny_root), how], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2, "the owner did not report its workers"
        assert all(alive(pid) for pid in pids)
        if death == "sigkill":
            owner.send_signal(signal.SIGKILL)
        owner.wait(60)
        deadline = time.monotonic() + 5.0
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [pid for pid in pids if alive(pid)]
    finally:
        owner.kill()
        owner.wait()
    for pid in survivors:  # leave nothing behind, then fail
        os.kill(pid, signal.SIGKILL)
    assert survivors == [], f"worker(s) {survivors} outlived the loader's process"
