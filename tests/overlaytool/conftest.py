"""Fixtures for the overlaytool tests. The helper modules beside this file (`tooling_repos`,
`scenario`, `rebase_scenario`) are put on the path for the tests in the folders below, which mirror
overlaytool's `tree/`, `export/` and `rebase/`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario import configure_v1, configure_v2, observed, patch_texts  # noqa: E402
from tooling_repos import Project, build_project  # noqa: E402


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project root whose pins point at two small local upstream repositories (file:// URLs)."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    return build_project(tmp_path)


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
