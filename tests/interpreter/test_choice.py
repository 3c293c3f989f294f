"""The envs' interpreter: the running one where supported, else one found on the host (real
subprocesses answering for fake interpreters), else a refusal naming what to install."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from interpreter import BasePython, base_python, other_pythons, supported_on_host, venv_minor
from interpreter.choice import SUPPORTED, UnsupportedPython, candidates


def fake_python(
    folder: Path, name: str, version: str, implementation: str = "cpython", runs: Path | None = None
) -> Path:
    """An executable that answers the version probe as `version` of `implementation` would (and
    adds a line to `runs` each time it is started)."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    record = f"echo {exe} >> {runs}\n" if runs else ""
    exe.write_text(f"#!/bin/sh\n{record}echo {version.replace('.', ' ')}\necho {implementation}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_a_supported_running_python_is_used_as_is() -> None:
    assert base_python((3, 12, 1), "/x/python3", offered=[], asked="") == BasePython("/x/python3", (3, 12, 1))
    assert sys.version_info[:2] in SUPPORTED  # the test runs on one (else the noxfile had refused)


def test_an_unsupported_python_finds_a_supported_one_and_says_so(tmp_path: Path) -> None:
    offered = [
        fake_python(tmp_path / "a", "python3", "3.14.0"),
        fake_python(tmp_path / "b", "python3", "3.12.3", implementation="pypy"),
        fake_python(tmp_path / "c", "python3", "3.12.3"),
    ]
    chosen = base_python((3, 14, 0), "/usr/bin/python3", offered=offered, asked="")
    assert (chosen.path, chosen.version, chosen.minor) == (str(offered[2]), (3, 12, 3), "3.12")
    assert (
        chosen.note
        == f"Python 3.14.0 (/usr/bin/python3) is not supported; the envs use Python 3.12.3 ({offered[2]})"
    )


@pytest.mark.parametrize("running", [(3, 14, 0), (3, 10, 12)])  # none found: the same refusal
def test_none_found_is_refused_naming_the_interpreter_the_versions_and_how(
    tmp_path: Path, running: tuple[int, int, int]
) -> None:
    offered = [fake_python(tmp_path, "python3", "3.10.1"), tmp_path / "missing"]
    with pytest.raises(UnsupportedPython) as refusal:
        base_python(running, "/usr/bin/python3", offered=offered, asked="")
    message = str(refusal.value)
    assert f"Python {'.'.join(map(str, running))} (/usr/bin/python3) cannot build the envs" in message
    assert "CPython 3.11, 3.12, 3.13" in message
    assert "pyenv install 3.12" in message


def test_the_host_is_searched_on_path_and_under_pyenv(tmp_path: Path) -> None:
    on_path = fake_python(tmp_path / "bin", "python3.12", "3.12.9")
    fake_python(tmp_path / "bin", "python3.9", "3.9.1")  # not a name the search asks for
    pyenv = fake_python(tmp_path / "pyenv" / "versions" / "3.13.0" / "bin", "python3", "3.13.0")
    found = candidates(path=str(tmp_path / "bin"), pyenv_root=tmp_path / "pyenv")
    assert found == [on_path, pyenv]


def test_pyenv_folders_of_unsupported_minors_are_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    for old in ("2.7.18", "3.9.1", "3.14.0"):
        fake_python(tmp_path / "pyenv" / "versions" / old / "bin", "python3", old, runs=runs)
    kept = fake_python(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin", "python3", "3.12.1")
    fake_python(tmp_path / "pyenv" / "shims", "python3.12", "3.12.1", runs=runs)  # pyenv's versions are
    monkeypatch.setenv("PATH", str(tmp_path / "pyenv" / "shims"))  # found below: its shims are not run
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    supported_on_host()
    assert not runs.exists(), runs.read_text()
    assert candidates() == [kept]


def test_an_interpreter_offered_under_several_names_is_started_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    exe = fake_python(tmp_path / "a", "python3", "3.12.1", runs=runs)
    (tmp_path / "link").symlink_to(exe)
    supported_on_host([exe, tmp_path / "link", exe])
    assert runs.read_text().splitlines() == [str(exe)]


def test_an_asked_python_is_used_when_supported_and_refused_by_name_when_not(tmp_path: Path) -> None:
    good = fake_python(tmp_path / "a", "python3", "3.13.0")
    chosen = base_python((3, 11, 7), "/usr/bin/python3", offered=[], asked=str(good))
    assert (chosen.path, chosen.minor) == (str(good), "3.13")
    assert chosen.note == f"the envs use $STREAMPETR_PYTHON={good} (Python 3.13.0)"
    old = fake_python(tmp_path / "b", "python3", "3.10.4")
    with pytest.raises(
        UnsupportedPython, match=r"STREAMPETR_PYTHON=.*b/python3 is Python 3\.10\.4; the envs need"
    ):
        base_python((3, 11, 7), "/usr/bin/python3", offered=[], asked=str(old))
    with pytest.raises(UnsupportedPython, match="is not a CPython that runs"):
        base_python((3, 11, 7), "/usr/bin/python3", offered=[], asked=str(tmp_path / "none"))


def test_for_a_program_the_note_and_the_refusal_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = fake_python(tmp_path / "a", "python3", "3.13.0")
    chosen = base_python((3, 11, 7), "/usr/bin/python3", offered=[], asked=str(good), program="nox")
    assert chosen.path == str(good)
    assert capsys.readouterr().err == f"nox: the envs use $STREAMPETR_PYTHON={good} (Python 3.13.0)\n"
    with pytest.raises(SystemExit, match=r"^nox: \$STREAMPETR_PYTHON=.* is not a CPython that runs"):
        base_python((3, 11, 7), "/usr/bin/python3", offered=[], asked=str(tmp_path / "none"), program="nox")


def test_a_venv_says_which_python_made_it(tmp_path: Path) -> None:
    assert venv_minor(tmp_path) is None
    (tmp_path / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"
    )
    assert venv_minor(tmp_path) == "3.12"


def test_nox_on_a_python_too_old_for_the_tooling_is_told_to_run_with_the_one_found(tmp_path: Path) -> None:
    found = fake_python(tmp_path, "python3", "3.12.3")
    with pytest.raises(UnsupportedPython) as refusal:
        base_python((3, 10, 13), "/usr/bin/python3", offered=[found], asked="")
    assert str(refusal.value) == (
        "Python 3.10.13 (/usr/bin/python3) cannot run the sessions (the tooling needs Python 3.11+); "
        f"Python 3.12.3 is at {found}: run nox with it (`{found} -m venv .venv && . .venv/bin/activate && "
        "pip install -r requirements/nox.txt`, then `nox ...`)"
    )


def test_the_host_offers_one_python_per_supported_minor_the_newest(tmp_path: Path) -> None:
    offered = [
        fake_python(tmp_path / "a", "python3", "3.12.1"),
        fake_python(tmp_path / "b", "python3", "3.12.9"),
        fake_python(tmp_path / "c", "python3", "3.10.2"),
        fake_python(tmp_path / "d", "python3", "3.13.0"),
    ]
    found = supported_on_host(offered)
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert found["3.12"].path == str(offered[1]) or running == "3.12"
    assert found["3.13"].path == str(offered[3]) or running == "3.13"
    assert set(found) == {"3.12", "3.13", running}


def test_the_other_pythons_include_the_distributions_python3_of_another_version(tmp_path: Path) -> None:
    """Debian 12's own python3 (3.11.2) is tested beside pyenv's newer 3.11 (nox's); the same version
    as the base is not tested twice."""
    base = BasePython(str(fake_python(tmp_path / "venv", "python3", "3.11.7")), (3, 11, 7))
    offered = [fake_python(tmp_path / "py312", "python3", "3.12.3"), Path(base.path)]
    debian = fake_python(tmp_path / "usr", "python3", "3.11.2")

    def versions(distribution: Path) -> list[tuple[int, ...]]:  # the running Python may add its minor
        found = other_pythons(base, offered, distribution=distribution)
        return [p.version for p in found if Path(p.path).is_relative_to(tmp_path)]

    assert versions(debian) == [(3, 12, 3), (3, 11, 2)]
    assert versions(fake_python(tmp_path / "same", "python3", "3.11.7")) == [(3, 12, 3)]
    assert versions(tmp_path / "none") == [(3, 12, 3)]
