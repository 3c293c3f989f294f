"""Upstream tier: the real series and overlay onto a throw-away fork of the pinned StreamPETR that
moved `projects/` and `tools/` under `src/` (N1 of issue 50). The runners put the code root (`src/`)
on the path, so the overlay's loader package must land there too: `--check` names every import of
it until `overlay_moves` puts it there, and suggests that move on the console beside the others."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from overlaytool.__main__ import main
from overlaytool.cache import mirror_path
from overlaytool.pins import load_pin
from overlaytool.tree.code_root import streampetr_code_root

REPO_ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.upstream
MOVES = '[target.overlay_moves]\nprojects = "src/projects"\ntools = "src/tools"\n'
LOADER_MOVE = 'dali_streampetr = "src/dali_streampetr"\n'


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def src_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """(a copy of the project's pins, patches and overlay; the fork's clone; its commit), with a
    private cache of `--shared` clones of the real mirrors: the real cache is only read."""
    root = tmp_path / "project"
    for part in ("upstream", "patches", "overlay"):
        ignore = shutil.ignore_patterns("StreamPETR", "__pycache__", "*.pyc", "rebase-report.*")
        shutil.copytree(REPO_ROOT / part, root / part, ignore=ignore)
    pin = load_pin(root / "upstream" / "streampetr.toml")
    for mirror in sorted(mirror_path(pin).parent.glob("*.git")):
        git(tmp_path, "clone", "--quiet", "--mirror", "--shared", str(mirror), f"cache/mirrors/{mirror.name}")
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "--quiet", "--shared", "--no-checkout", str(mirror_path(pin)), str(fork))
    git(fork, "checkout", "--quiet", "-b", "main", pin.commit)
    (fork / "src").mkdir()
    git(fork, "mv", "projects", "tools", "src/")
    git(fork, "-c", "user.name=fork", "-c", "user.email=fork@example.com", "commit", "-q", "-m", "src/")
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    return root, fork, git(fork, "rev-parse", "HEAD")


def add_to_streampetr_target(root: Path, lines: str, after: str = 'overlay = "overlay"\n') -> None:
    config = root / "patches" / "config.toml"
    config.write_text(config.read_text().replace(after, after + lines, 1))


def test_the_loader_package_is_moved_to_the_code_root_of_a_real_src_fork(src_fork, capsys) -> None:
    root, fork, commit = src_fork
    check = ["--root", str(root), "rebase", "--check", commit, "--from", str(fork)]
    assert main(check) == 1
    out = capsys.readouterr().out
    moves = 'dali_streampetr = "src/dali_streampetr", projects = "src/projects", tools = "src/tools"'
    assert f"suggested `overlay_moves` for this target in patches/config.toml: {moves}\n" in out

    add_to_streampetr_target(root, MOVES)  # what the old check accepted: the loader "at the root"
    assert main(check) == 1
    out = capsys.readouterr().out
    report = json.loads((root / "upstream" / "rebase-report.json").read_text())
    files = {r["file"] for r in report["overlay_references"]}
    assert "src/projects/mmdet3d_plugin/core/apis/test.py" in files  # the shard hook's import (issue 50)
    assert {r["names"] for r in report["overlay_references"]} == {"dali_streampetr"}
    assert 'config.toml: dali_streampetr = "src/dali_streampetr"\n' in out

    add_to_streampetr_target(root, LOADER_MOVE, after='tools = "src/tools"\n')
    assert main(check) == 0
    assert main(["--root", str(root), "rebase", commit, "--from", str(fork)]) == 0
    code = streampetr_code_root(root)  # where the runners run tools/ and what they put on the path
    assert code == root / "upstream" / "StreamPETR" / "src"
    assert (code / "dali_streampetr" / "__init__.py").is_file()
    assert (code / "tools" / "tool_hooks" / "loader_choice.py").is_file() and (
        code / "tools" / "train.py"
    ).is_file()
