"""Who uses the env now (hermetic: real processes and `flock`s; the builder's install steps recorded,
`build_recorder.py`): a build that must change the env waits for the jobs holding a claim on it and
names them; a claim whose job is gone (this host's or another's) or whose file is damaged is removed
by name and blocks nothing; a new claim waits for a running build; a build inside a session that
holds a claim is refused instead of waiting for itself."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from build_recorder import record_builds, write_built_env
from claim_jobs import SCRIPTS, Job
from upstream_env import EnvBuildError, claim_env
from upstream_env import __main__ as cli
from upstream_env import build as builder
from upstream_env.claims import build_lock, claims_dir, wait_for_claims


def wait_until_said(capsys: pytest.CaptureFixture[str], text: str, alive: threading.Thread) -> str:
    """What the build said up to `text` (or until it ended)."""
    said, deadline = "", time.monotonic() + 60
    while alive.is_alive() and text not in said:
        assert time.monotonic() < deadline, said
        time.sleep(0.05)
        said += capsys.readouterr().err
    return said


@pytest.mark.parametrize("flag", ["--force", "--clean"])
def test_a_build_waits_for_the_jobs_running_from_the_env_and_names_them(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shown failing on the builder before this change: both rebuilt (`--clean` deleted the env) at once."""
    builds = record_builds(monkeypatch)
    env = tmp_path / "env"
    write_built_env(env, builder.Choices())
    here, there = Job(env, "evaluate", tmp_path), Job(env, "train_dali", tmp_path, host="gpu-node-3")
    build = threading.Thread(target=cli.main, args=(["build", "--env", str(env), flag],))
    build.start()
    said = wait_until_said(capsys, "gpu-node-3", build)
    assert build.is_alive() and builds == [] and (env / "bin" / "python").exists(), "it waits"
    assert f"{flag} of the upstream env waits for 2 job(s) running from {env}" in said
    assert f"pid {here.pid} on " in said and "(evaluate, since " in said
    assert f"pid {there.pid} on gpu-node-3 (train_dali, since " in said
    here.finish()
    there.finish()
    build.join(timeout=60)
    assert not build.is_alive() and len(builds) == 1, "it built once the jobs ended"
    assert not list(claims_dir(env).iterdir()), "the jobs took their claims with them"


def test_stale_and_damaged_claims_are_removed_by_name_and_block_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    dead_here, dead_there = Job(env, "bench", tmp_path), Job(env, "tests", tmp_path, host="gpu-node-9")
    dead_here.kill()  # SIGKILL: the kernel releases their locks, their files stay
    dead_there.kill()
    (claims_dir(env) / "node-1.json").write_bytes(b'{"pid": "12\xff')  # damaged
    (claims_dir(env) / "other-2.json").write_text('{"pid": 4242, "host": "gpu-node-1"}')  # another format
    assert len(list(claims_dir(env).iterdir())) == 4
    with build_lock(env, "test"):
        wait_for_claims(env, "the build")
    said = capsys.readouterr().err
    assert f"pid {dead_here.pid} on " in said and "(bench, since " in said and "no longer running" in said
    assert f"pid {dead_there.pid} on gpu-node-9 (tests, since " in said
    assert said.count("an unreadable holder") == 2 and "node-1.json" in said and "other-2.json" in said
    assert said.count("removed a stale claim") == 4 and not list(claims_dir(env).iterdir())


def test_a_new_claim_waits_for_a_running_build_and_names_it(tmp_path: Path) -> None:
    """A session claims only once the build ends: the build lock's shared side."""
    env = tmp_path / "env"
    code = "import sys; from pathlib import Path; from upstream_env import claim_env\n"
    code += "with claim_env('evaluate', env=Path(sys.argv[1])): print('claimed')"
    with build_lock(env, "upstream_env build (--force)"):
        path = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
        job = subprocess.Popen(
            [sys.executable, "-c", code, str(env)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=path,
        )  # fmt: skip
        assert job.stderr is not None
        line = job.stderr.readline()
        assert (
            f"waits for the build of {env} by pid " in line and "(upstream_env build (--force), since" in line
        )
        assert job.poll() is None, "it still waits"
    out, _ = job.communicate(timeout=60)
    assert out == "claimed\n"


def test_a_build_inside_a_session_that_claims_the_env_is_refused_not_deadlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shown failing on the builder before this change: it rebuilt under the session's own claim."""
    builds = record_builds(monkeypatch)
    env = tmp_path / "env"
    write_built_env(env, builder.Choices())
    with claim_env("tests", env=env):
        builder.build(env)  # current: nothing to change, no wait
        with pytest.raises(EnvBuildError, match="cannot wait for itself"):
            builder.build(env, force=True)
    assert builds == []
    builder.build(env, force=True)
    assert len(builds) == 1
