"""The env's mmcv ops choice persists (hermetic, stdlib only): `upstream_env -- --cuda` followed by a
session that builds without a flag (`train_dali`, `evaluate`, ...) keeps the CUDA-ops env instead of
rebuilding a CPU-ops one; `--cuda`/`--no-cuda` given explicitly still decide.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_recorder import fake_probe, record_builds, write_built_env
from upstream_env import __main__ as cli
from upstream_env import build as builder
from upstream_env.build import STAMP, digest, is_current, read_stamp, resolve


@pytest.mark.parametrize("recorded", [True, False, None])
def test_an_explicit_choice_wins_over_the_recorded_one(recorded: bool | None) -> None:
    stamp = {"digest": "x", "cuda": recorded}
    assert resolve(stamp, cuda=True).cuda is True
    assert resolve(stamp, cuda=False).cuda is False
    assert resolve(stamp, cuda=None).cuda is recorded, "no flag: the flavour the env was built with"
    assert resolve(None, cuda=None).cuda is None, "no env yet: auto-detect"


def _built_env(tmp_path: Path, cuda: bool | None) -> Path:
    env = tmp_path / "env"
    write_built_env(env, builder.Choices(cuda=cuda))
    return env


def test_stamp_records_the_flavour_and_an_unflagged_check_accepts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_probe(monkeypatch)  # no GPU: auto means CPU ops
    env = _built_env(tmp_path, True)
    stamp = read_stamp(env)
    assert stamp is not None and stamp["digest"] == digest(builder.Choices(cuda=True), cuda_ops=True)
    assert (stamp["cuda"], stamp["full_ops"], stamp["arch_list"]) == (
        True,
        False,
        ["8.0", "8.6", "8.9", "9.0"],
    )
    assert is_current(env) and is_current(env, True)
    assert not is_current(env, False), "--no-cuda after --cuda rebuilds"
    cpu = _built_env(tmp_path / "cpu", None)
    assert is_current(cpu) and not is_current(cpu, True)


def test_an_older_or_broken_stamp_means_rebuild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_probe(monkeypatch)
    env = _built_env(tmp_path, None)
    assert is_current(env)
    (env / STAMP).write_text(
        digest(builder.Choices(), cuda_ops=False) + "\n"
    )  # the stamp's previous format: a bare digest
    assert read_stamp(env) is None and not is_current(env)
    (env / STAMP).write_text('{"digest": "not this one", "cuda": null}')
    assert not is_current(env)


def test_cuda_then_a_plain_build_does_not_rebuild(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = record_builds(monkeypatch)
    env = str(tmp_path / "env")
    assert cli.main(["build", "--env", env, "--cuda"]) == 0  # nox -s upstream_env -- --cuda
    assert cli.main(["build", "--env", env]) == 0  # nox -s train_dali builds without a flag
    assert [b.cuda for b in builds] == [True], "the second build found the CUDA-ops env current"
    assert cli.main(["build", "--env", env, "--no-cuda"]) == 0
    assert cli.main(["build", "--env", env]) == 0
    assert [b.cuda for b in builds] == [True, False]
    assert json.loads((tmp_path / "env" / STAMP).read_text())["cuda"] is False


def test_clean_keeps_the_recorded_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = record_builds(monkeypatch)
    env = str(tmp_path / "env")
    assert cli.main(["build", "--env", env, "--cuda"]) == 0
    assert cli.main(["build", "--env", env, "--clean"]) == 0
    assert [b.cuda for b in builds] == [True, True], "the env was deleted and rebuilt with CUDA ops again"
