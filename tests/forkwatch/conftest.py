"""Fixtures for the watch and vetting tests: the rebase tests' small project (tests/overlaytool) and
forks of its upstream as local repositories."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "overlaytool"))

from rebase_scenario import setup_series  # noqa: E402
from tooling_repos import Project, build_project  # noqa: E402


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The rebase scenario's project, applied: two patches (tools/train.py, pkg/model.py) and an
    overlay file, pinned to a local upstream (file:// URL); its cache is `tmp_path / "cache"`."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    return setup_series(build_project(tmp_path), tmp_path)
