"""Fixtures of the loader tests: the tiny data set of `loader_data`. The helper modules beside this
file (`loader_data`, `upstream_like`, `box_match`, `bit_for_bit`, `image_reference`) are put on the
path for the tests in the folders below, which mirror the loader's wings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loader_data import make_dataset  # noqa: E402


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
