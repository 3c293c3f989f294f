"""One env for a cluster (hermetic: a real venv, real pip, tiny real wheels, real processes and
`flock`s; the GPU faked in the builder's probe as in test_build_install.py): a CPU login node and GPU
nodes share one checkout and `.nox/_env/upstream`. Auto gives the env CUDA ops once a GPU node's torch
sees a GPU and never takes them back on the login node; a forced rebuild waits for the jobs running
from the env and names them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from claim_jobs import Job, snapshot
from tiny_wheels import EXT, Wheels
from upstream_env import build as builder
from upstream_env.build import is_current

pytestmark = pytest.mark.slow  # about 10 CPU-s: pip runs in a fresh venv


def installed_ext(env: Path) -> bytes:
    (ext,) = env.glob(f"lib/python*/site-packages/{EXT}")
    return ext.read_bytes()


def test_a_login_node_and_gpu_nodes_share_one_env(
    tmp_path: Path, wheels: Wheels, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each step shown failing on the builder before this change: step 3 rebuilt CPU ops on the login
    node; step 4's forced rebuild reinstalled mmcv-full under the running job."""
    env = tmp_path / "env"
    cuda = "cuda-reduced-arch8.0..9.0"
    # 1. the login node (no GPU) builds by auto: CPU ops
    builder.build(env)
    assert wheels.asked == ["cpu-reduced"] and installed_ext(env) == wheels.ext["cpu-reduced"]
    # 2. a GPU node's first run: its torch sees a GPU, the env gets CUDA ops
    wheels.gpu = True
    assert not is_current(env)
    builder.build(env)
    assert wheels.asked[-1] == cuda and installed_ext(env) == wheels.ext[cuda]
    # 3. the login node's next run: the CUDA ops serve it too, nothing is rebuilt
    wheels.gpu = False
    assert is_current(env), "an env with CUDA ops is current on a host without a GPU"
    builder.build(env)
    assert wheels.asked == ["cpu-reduced", cuda] and installed_ext(env) == wheels.ext[cuda]
    # 4. a GPU node's job runs from the env while the login node forces a rebuild
    job = Job(env, "train_dali", tmp_path, host="gpu-node-7")
    before = snapshot(env)
    rebuild = threading.Thread(target=builder.build, args=(env,), kwargs={"force": True})
    rebuild.start()
    said, deadline = "", time.monotonic() + 120
    while rebuild.is_alive() and f"pid {job.pid} on gpu-node-7 (train_dali" not in said:
        assert time.monotonic() < deadline, f"the rebuild neither waited nor ended: {said}"
        time.sleep(0.05)
        said += capsys.readouterr().err
    assert rebuild.is_alive(), "the forced rebuild ran while the job ran from the env"
    assert "--force of the upstream env waits for 1 job(s)" in said and job.claim in said
    assert snapshot(env) == before, "the waiting rebuild changed nothing yet"
    assert "changed while it ran: []" in job.finish(), "the job kept its mmcv files until it ended"
    rebuild.join(timeout=120)
    assert not rebuild.is_alive() and wheels.asked[2:] == [cuda], "then the rebuild ran, CUDA ops kept"
    after = snapshot(env)
    assert after != before and installed_ext(env) == wheels.ext[cuda] and is_current(env)
