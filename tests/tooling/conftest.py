"""Fixtures for the overlay tooling tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from tooling_repos import TRAIN_PY, Project, commit_files, git, write_pin


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project root whose pins point at two small local upstream repositories (file:// URLs)."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    return build_project(tmp_path)


def build_project(tmp_path: Path) -> Project:
    """The `project` fixture's project under `tmp_path` (its cache: `tmp_path / "cache"`)."""
    upstream = tmp_path / "remote" / "exiawsh" / "StreamPETR"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q", "-b", "main")
    history = [commit_files(upstream, {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}, "released")]
    mmdet3d = tmp_path / "remote" / "open-mmlab" / "mmdetection3d"
    mmdet3d.mkdir(parents=True)
    git(mmdet3d, "init", "-q", "-b", "main")
    mm_commit = commit_files(mmdet3d, {"mmdet3d/__init__.py": "x = 1\n"}, "rc6")
    root = tmp_path / "proj"
    (root / "upstream").mkdir(parents=True)
    (root / "patches").mkdir()
    (root / "overlay").mkdir()
    (root / "patches" / "series").write_text("# test series\n")
    write_pin(
        root / "upstream" / "streampetr.toml",
        "StreamPETR",
        upstream.as_uri(),
        history[0],
        "upstream/StreamPETR",
    )
    write_pin(
        root / "upstream" / "mmdetection3d.toml", "mmdetection3d", mmdet3d.as_uri(), mm_commit,
        "upstream/StreamPETR/mmdetection3d",
    )  # fmt: skip
    return Project(root, upstream, mmdet3d, history[0], history)
