"""Fixtures for the watch and vetting tests: the rebase tests' small project (tests/tooling) and
forks of its upstream as local repositories."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tooling"))

from rebase_scenario import setup_series  # noqa: E402
from tooling_repos import TRAIN_PY, Project, commit_files, git, write_config, write_pin  # noqa: E402


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The rebase scenario's project, applied: two patches (tools/train.py, pkg/model.py) and an
    overlay file, pinned to a local upstream (file:// URL); its cache is `tmp_path / "cache"`."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    upstream = tmp_path / "remote" / "exiawsh" / "StreamPETR"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q", "-b", "main")
    first = commit_files(upstream, {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}, "released")
    mmdet3d = tmp_path / "remote" / "open-mmlab" / "mmdetection3d"
    mmdet3d.mkdir(parents=True)
    git(mmdet3d, "init", "-q", "-b", "main")
    mm_commit = commit_files(mmdet3d, {"mmdet3d/__init__.py": "x = 1\n"}, "rc6")
    root = tmp_path / "proj"
    (root / "upstream").mkdir(parents=True)
    (root / "overlay").mkdir()
    write_config(root)
    write_pin(
        root / "upstream" / "streampetr.toml", "StreamPETR", upstream.as_uri(), first, "upstream/StreamPETR"
    )
    write_pin(
        root / "upstream" / "mmdetection3d.toml", "mmdetection3d", mmdet3d.as_uri(), mm_commit,
        "upstream/StreamPETR/mmdetection3d",
    )  # fmt: skip
    return setup_series(Project(root, upstream, mmdet3d, first, [first]), tmp_path)
