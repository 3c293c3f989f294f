"""Deadlines where the loader waits: a worker that hangs while the pipeline is built, and a
``pipe.run()`` that never returns (the process still exits normally afterwards)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.pipeline_errors import PipelineStartError
from dali_streampetr.settings import LoaderConfig
from loader_data import tiny_config

LOADER_DIR = Path(__file__).resolve().parents[1]  # the helper modules (loader_data)
REPO_ROOT = LOADER_DIR.parents[1]

_stop_forked_children = False


def _stop_if_asked() -> None:
    if _stop_forked_children:  # in the new child: freeze before it reports that it started
        os.kill(os.getpid(), signal.SIGSTOP)


os.register_at_fork(after_in_child=_stop_if_asked)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_a_worker_that_hangs_at_start_raises_after_start_timeout_then_builds_again(tiny_root):
    """The python worker stops right after the fork (it never reports that it started): next()
    raises PipelineStartError once start_timeout_s has passed, naming the key and the stage, the
    frozen worker is killed, and the next next() builds a working pipeline at iteration 0.

    The rebuild runs under the default deadline: a worker's start on a loaded host can take longer
    than the 1.5 s under test (the rebuild raised a PipelineStartError of its own there)."""
    global _stop_forked_children
    with build_loader(tiny_config(py_num_workers=1, start_timeout_s=1.5), tiny_root, seed=3) as loader:
        _stop_forked_children = True
        try:
            start = time.monotonic()
            with pytest.raises(PipelineStartError) as err:
                next(loader)
            waited = time.monotonic() - start
        finally:
            _stop_forked_children = False
        msg = str(err.value)
        assert 1.5 <= waited < 30, waited
        assert "start_timeout_s=1.5 s" in msg and "worker start-up" in msg and "iteration 0" in msg
        pids = [int(p) for p in msg.split("worker process(es) [")[1].split("]")[0].split(",")]
        assert len(pids) == 1
        deadline = time.monotonic() + 5
        while alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pids[0]), "the frozen worker was not killed"
        loader.cfg = replace(loader.cfg, start_timeout_s=LoaderConfig.start_timeout_s)
        batch = next(loader)
    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=3) as clean:
        assert torch.equal(batch["img"], next(clean)["img"])


# A pipe.run() that never returns (py_num_workers=0: the read blocks on a FIFO nobody writes, as
# on a dead NFS mount): next() raises naming the stage, the thread is abandoned, and the process
# ends normally when its main function returns.
FROZEN_RUN = textwrap.dedent(
    """
    import sys
    from loader_data import tiny_config
    from dali_streampetr.loader import build_loader
    from dali_streampetr.pipeline.pipeline_errors import PipelineStalledError

    loader = build_loader(tiny_config(py_num_workers=0, batch_timeout_s=1.0), sys.argv[1], seed=3)
    try:
        next(loader)
    except PipelineStalledError as exc:
        print(exc, flush=True)
    loader.close()
    print("main returns", flush=True)
    """
)


def test_a_frozen_pipe_run_raises_naming_the_stage_and_the_process_exits_cleanly(damaged_root):
    with build_loader(tiny_config(), damaged_root, seed=3) as loader:
        path = loader.frames[loader.planner.plan(0)[0].index].img_paths[1]
    os.unlink(path)
    os.mkfifo(path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADER_DIR), str(REPO_ROOT / "overlay")])}
    proc = subprocess.run(  # a process that does not exit fails here (no wall-clock bound on one that does)
        [sys.executable, "-c", FROZEN_RUN, str(damaged_root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "batch_timeout_s=1 s (stage: pipe.run(): reading, decoding and resizing" in proc.stdout
    assert proc.stdout.rstrip().endswith("main returns")


# A worker forked only after start_timeout_s has passed (a loaded host), which then hangs at start:
# the deadline's kill had found no worker yet, so DALI waited for this one forever.
LATE_WORKER = textwrap.dedent(
    """
    import os, signal, sys, time
    from dataclasses import replace
    from loader_data import tiny_config
    from dali_streampetr.loader import build_loader
    from dali_streampetr.pipeline.pipeline_errors import PipelineStartError
    from dali_streampetr.settings import LoaderConfig

    late = False
    os.register_at_fork(before=lambda: late and time.sleep(2.5),
                        after_in_child=lambda: late and os.kill(os.getpid(), signal.SIGSTOP))
    with build_loader(tiny_config(py_num_workers=1, start_timeout_s=1.0), sys.argv[1], seed=3) as loader:
        late = True
        try:
            next(loader)
        except PipelineStartError as exc:
            print(exc, flush=True)
        late = False
        loader.cfg = replace(loader.cfg, start_timeout_s=LoaderConfig.start_timeout_s)  # a loaded host
        print(sorted(next(loader))[0], flush=True)
    """
)


def test_a_worker_forked_after_the_deadline_is_killed_too(tiny_root):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LOADER_DIR), str(REPO_ROOT / "overlay")])}
    script = [sys.executable, "-c", LATE_WORKER, str(tiny_root)]
    proc = subprocess.Popen(script, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the stopped worker too
        out, err = proc.communicate()
        pytest.fail(f"next() never raised: the late worker was not killed\n{err[-3000:]}")
    assert proc.returncode == 0, err[-3000:]
    assert "start_timeout_s=1 s (stage: pipeline build and python worker start-up" in out
    assert out.rstrip().endswith("centers2d")  # the next next() built again and served a batch
