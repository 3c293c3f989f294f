"""A venv behind a stamp (``interpreter.stamped_venv``): made and installed once, reused while its key and
its Python hold, remade or installed over when they change, and stamped only once every install
succeeded; the installer is spelled in one place."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from interpreter import ensure_venv, install_command

MINOR = f"{sys.version_info[0]}.{sys.version_info[1]}"


class FakeRun:
    """Records the commands; ``-m venv`` makes a venv's python and ``pyvenv.cfg`` of ``minor``."""

    def __init__(self, minor: str = MINOR, fail: str | None = None) -> None:
        self.commands: list[list[str]] = []
        self.minor, self.fail = minor, fail

    def __call__(self, cmd: list[str]) -> None:
        self.commands.append(cmd)
        if self.fail and self.fail in cmd:
            raise RuntimeError(f"{self.fail} failed")
        if cmd[1:3] == ["-m", "venv"]:
            env = Path(cmd[-1])
            (env / "bin").mkdir(parents=True, exist_ok=True)
            (env / "bin" / "python").write_text("")
            (env / "pyvenv.cfg").write_text(f"version = {self.minor}.0\n")


def test_made_installed_and_stamped_once_then_reused(tmp_path: Path) -> None:
    env, run = tmp_path / "env", FakeRun()
    python = ensure_venv(env, sys.executable, "k1", [("-r", "a.txt"), ("--no-deps", "b")], run, stamp=".s")
    assert python == env / "bin" / "python"
    assert run.commands == [
        [sys.executable, "-m", "venv", "--clear", str(env)],
        install_command(python, "-r", "a.txt"),
        install_command(python, "--no-deps", "b"),
    ]
    assert "k1" in (env / ".s").read_text()
    again = FakeRun()
    ensure_venv(env, sys.executable, "k1", [("-r", "a.txt")], again, stamp=".s")
    assert again.commands == []


def test_a_new_key_installs_over_a_venv_of_the_same_minor_and_remakes_another(tmp_path: Path) -> None:
    env = tmp_path / "env"
    ensure_venv(env, sys.executable, "k1", [], FakeRun(), stamp=".s", minor=MINOR)
    same = FakeRun()
    ensure_venv(env, sys.executable, "k2", [("-r", "a.txt")], same, stamp=".s", minor=MINOR)
    assert same.commands == [install_command(env / "bin" / "python", "-r", "a.txt")]  # no venv made
    other = FakeRun()
    ensure_venv(env, sys.executable, "k3", [], other, stamp=".s", minor="3.0")
    assert [c[1:3] for c in other.commands] == [["-m", "venv"]]
    fresh = FakeRun()
    ensure_venv(env, sys.executable, "k4", [], fresh, stamp=".s")  # no minor: always made afresh
    assert [c[1:3] for c in fresh.commands] == [["-m", "venv"]]


def test_a_failed_install_leaves_no_stamp_and_the_next_call_builds_again(tmp_path: Path) -> None:
    env = tmp_path / "env"
    ensure_venv(env, sys.executable, "k1", [], FakeRun(), stamp=".s")
    with pytest.raises(RuntimeError, match="b.txt failed"):
        ensure_venv(env, sys.executable, "k2", [("-r", "b.txt")], FakeRun(fail="b.txt"), stamp=".s")
    assert "k1" in (env / ".s").read_text()  # the old stamp: not current for k2
    again = FakeRun()
    ensure_venv(env, sys.executable, "k2", [("-r", "b.txt")], again, stamp=".s")
    assert len(again.commands) == 2 and "k2" in (env / ".s").read_text()
