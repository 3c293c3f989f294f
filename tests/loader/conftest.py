"""Fixtures of the loader tests: the tiny data set of `loader_data`."""

from __future__ import annotations

from pathlib import Path

import pytest
from loader_data import make_dataset


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("tiny_nuscenes"))


@pytest.fixture
def damaged_root(tiny_root, tmp_path) -> Path:
    """A private copy of the tiny data set, to damage."""
    import shutil

    root = tmp_path / "damaged"
    shutil.copytree(tiny_root, root)
    return root
