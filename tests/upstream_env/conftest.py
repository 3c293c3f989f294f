"""The env builder's tests share the stack runs' helper (`tests/upstream/stack_runs.py`: the env's
python, the applied checkout) with the end-to-end stack tests; the `wheels` fixture runs the builder
for real on a real venv with tiny wheels (`tiny_wheels.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "upstream"))


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201  (tiny_wheels.Wheels)
    """The builder with tiny inputs: requirements `mmcv-full==1.6.0`, no index, no torch; the GPU the
    env's torch sees is `wheels.gpu`."""
    from tiny_wheels import Wheels, tiny_mmdet3d
    from upstream_env import build as builder

    wheels = Wheels(tmp_path / "wheels")
    requirements, constraints = tmp_path / "upstream.txt", tmp_path / "constraints.txt"
    requirements.write_text("mmcv-full==1.6.0\n")
    constraints.write_text("")
    monkeypatch.setattr(builder, "REQUIREMENTS", requirements)
    monkeypatch.setattr(builder, "CONSTRAINTS", constraints)
    monkeypatch.setattr(builder, "LOG_FILE", tmp_path / "build.log")
    monkeypatch.setattr(builder, "BUILD_PREREQS", ("pip",))  # already in the venv: no download
    monkeypatch.setattr(builder, "BESIDE_NEEDS", ("pip",))
    monkeypatch.setattr(builder, "NO_DEPS", ())
    monkeypatch.setattr(builder, "IMPORT_CHECKS", ("import mmcv", "import mmdet3d"))
    monkeypatch.setattr(builder, "probe", wheels.info)
    monkeypatch.setattr(builder, "ensure_mmcv_wheel", wheels.ensure)
    monkeypatch.setattr(
        builder, "ensure_mmdet3d_wheel", lambda python, log: tiny_mmdet3d(tmp_path / "m3d").parent
    )
    monkeypatch.setenv(
        "STREAMPETR_DALI_CACHE", str(tmp_path / "cache")
    )  # its step timings: not the user's ETAs
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # everything from the wheel folders
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return wheels
