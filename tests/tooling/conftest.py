"""Fixtures for the overlay tooling tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario import configure_v1, configure_v2, observed, patch_texts
from tooling_repos import TRAIN_PY, Project, commit_files, git, write_config, write_pin


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
    (root / "overlay").mkdir()
    write_config(root)
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


@pytest.fixture(scope="session")
def texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scenario's patches, made once."""
    return patch_texts(tmp_path_factory.mktemp("patches"))


@pytest.fixture(scope="session")
def clean_fresh(tmp_path_factory: pytest.TempPathFactory, texts: dict[str, str]) -> dict:
    """What an uninterrupted apply of scenario version 1 on a fresh tree leaves (`observed`)."""
    tmp = tmp_path_factory.mktemp("clean-fresh")
    project = build_project(tmp)
    configure_v1(project, texts)
    assert project.call("apply").returncode == 0
    return observed(project)


@pytest.fixture(scope="session")
def clean_changed(tmp_path_factory: pytest.TempPathFactory, texts: dict[str, str]) -> dict:
    """What an uninterrupted apply of scenario version 2 leaves (`observed`)."""
    tmp = tmp_path_factory.mktemp("clean-changed")
    project = build_project(tmp)
    configure_v1(project, texts)
    configure_v2(project, texts)
    assert project.call("apply").returncode == 0
    return observed(project)
