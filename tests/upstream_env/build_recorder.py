"""Shared by the env builder's CLI tests: the install steps replaced by a recorder that writes the
stamp as a real build does (no venv, no pip); an `mmcv-wheel` run writes none, as the real one."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_env import build as builder


def record_builds(monkeypatch: pytest.MonkeyPatch, mmcv_runs: list | None = None) -> list[builder.Choices]:
    """The choices of every build that would have run, in order; those of `mmcv-wheel` runs go to
    `mmcv_runs` (when given) instead."""
    builds: list[builder.Choices] = []

    def fake_build(env: Path, python: Path, choices: builder.Choices, *, mmcv_only: bool = False) -> Path:
        if mmcv_only:
            assert mmcv_runs is not None, "an mmcv-wheel run nobody expected"
            mmcv_runs.append(choices)
            return env / "wheel-folder"
        builds.append(choices)
        (env / "bin").mkdir(parents=True, exist_ok=True)
        python.write_text("")
        builder._write_stamp(env, choices)
        return python

    monkeypatch.setattr(builder, "_build", fake_build)
    return builds
