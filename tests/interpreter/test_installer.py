"""The installer of the envs (``interpreter.installer``): uv with the package sources pip would use,
copies (not links into uv's cache), and pip where uv is absent. Real uv, real pip, real venvs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from interpreter import install_command, installer, pip_settings
from interpreter.installer import uv_options
from wheel_files import make_wheel


@pytest.fixture
def pip_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty pip configuration file, and no package source from the host's files or ``PIP_*``."""
    config = tmp_path / "pip.conf"
    config.write_text("")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "no-site-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))
    for name in ("INDEX_URL", "EXTRA_INDEX_URL", "FIND_LINKS", "NO_INDEX", "CONSTRAINT"):
        monkeypatch.delenv(f"PIP_{name}", raising=False)
    return config


def test_pips_files_and_variables_become_uv_options_and_the_variables_win(
    tmp_path: Path, pip_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, gone = tmp_path / "wheels", tmp_path / "gone"
    here.mkdir()
    pip_config.write_text(
        "[global]\nindex-url = https://index.invalid/simple\n"
        f"extra-index-url = https://extra.invalid/simple file://{gone}\nfind-links = {gone}\n"
    )
    options = uv_options(pip_settings())
    assert options == [
        "--index-url",
        "https://index.invalid/simple",
        "--extra-index-url",
        "https://extra.invalid/simple",
    ], "a local source that does not exist is skipped, as pip skips it"
    monkeypatch.setenv("PIP_FIND_LINKS", str(here))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    options = uv_options(pip_settings())
    assert options[0] == "--no-index" and options[-2:] == ["--find-links", str(here)]


def test_a_wheel_reachable_only_through_pips_variables_installs_with_uv(
    tmp_path: Path, pip_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails where uv is not given pip's sources: with no index, it finds no `tinypkg`."""
    make_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"tinypkg.py": b"VALUE = 1\n"})
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    python = env / "bin" / "python"
    command = install_command(python, "tinypkg==1.0")
    assert command[0] == "env" and Path(command[2]).name == "uv"
    subprocess.run(command, check=True, capture_output=True)
    shown = subprocess.run(
        [python, "-c", "import tinypkg; print(tinypkg.VALUE)"], capture_output=True, text=True
    )
    assert shown.stdout == "1\n"

    installed = next(env.glob("lib/python*/site-packages/tinypkg.py"))
    installed.write_bytes(b"VALUE = 2  # edited in place\n")  # a hard link would edit uv's cache too
    subprocess.run(
        install_command(python, "--force-reinstall", "tinypkg==1.0"), check=True, capture_output=True
    )
    assert installed.read_bytes() == b"VALUE = 1\n", "the reinstall is the wheel's file, not the edit"


def test_every_index_pip_reads_offers_its_versions_as_with_pip(
    tmp_path: Path, pip_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip takes the best match over all its indexes; uv's default, only the first index that has the
    project (an extra index before the main one): there `tinypkg==1.0`, on the main index alone, is
    "no solution"."""
    for index, version in (("main", "1.0"), ("extra", "2.0")):
        wheel = make_wheel(tmp_path / index / "files", "tinypkg", version, {"tinypkg.py": b"V = 0\n"})
        page = tmp_path / index / "simple" / "tinypkg" / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text(f'<a href="../../files/{wheel.name}">{wheel.name}</a>\n')
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "main" / "simple").as_uri())
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", (tmp_path / "extra" / "simple").as_uri())
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    done = subprocess.run(
        install_command(env / "bin" / "python", "tinypkg==1.0"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert next(env.glob("lib/python*/site-packages/tinypkg-1.0.dist-info")).is_dir()


def test_a_setuptools_build_leaves_nothing_in_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv's lock for a setuptools build (``uv-setuptools-<digest>.lock``, never removed) goes into uv's
    cache, not into the temp folder of the process that builds the env (fails without its own TMPDIR)."""
    source = tmp_path / "tinysetup"
    source.mkdir()
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinysetup"\nversion = "1.0"\n'
    )
    (source / "tinysetup.py").write_text("VALUE = 1\n")
    temp, cache = tmp_path / "temp", tmp_path / "uv-cache"
    temp.mkdir()
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    monkeypatch.setenv("TMPDIR", str(temp))
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    subprocess.run(install_command(env / "bin" / "python", "--no-deps", source), check=True)
    assert subprocess.run([env / "bin" / "python", "-c", "import tinysetup"]).returncode == 0
    assert list(temp.iterdir()) == []
    assert list((cache / "tmp").glob("uv-setuptools-*.lock"))


def test_without_uv_the_command_is_pips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installer, "uv_binary", lambda: None)
    assert install_command("/env/bin/python", "-r", "a.txt")[:4] == [
        "/env/bin/python",
        "-m",
        "pip",
        "install",
    ]
