"""Fixtures for the runner tests: the overlaytool tests' small project (tests/overlaytool)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "overlaytool"))

from tooling_repos import Project, build_project  # noqa: E402


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A throw-away project whose pins point at small local upstream repositories (file:// URLs)."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    return build_project(tmp_path)
