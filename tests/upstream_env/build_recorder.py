"""Shared by the env builder's CLI tests: the install steps replaced by a recorder that writes the
stamp as a real build does (no venv, no pip: a stand-in `_ext` file); an `mmcv-wheel` run writes
none, as the real one. The env's torch is asked through a faked probe that sees no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_env import build as builder

NO_GPU = {"tag": "cp311", "torch": "2.14.1+cu130", "torch_cuda": "13.0", "cuda_available": False}


def fake_probe(monkeypatch: pytest.MonkeyPatch, gpu: bool = False) -> None:
    """The env's torch as the builder's probe sees it: a CUDA build, a GPU visible or not."""
    monkeypatch.setattr(builder, "probe", lambda python: {**NO_GPU, "cuda_available": gpu})


def write_built_env(env: Path, choices: builder.Choices) -> Path:
    """An env as a build leaves it: python, the installed `_ext` and the stamp; its python."""
    python = env / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text("")
    ext = env / "lib" / "python3.11" / "site-packages" / "mmcv" / "_ext.so"
    ext.parent.mkdir(parents=True, exist_ok=True)
    ext.write_bytes(b"stand-in ops\n")
    cuda_ops, why = builder.resolve_ops(python, choices.cuda)
    builder._write_stamp(env, choices, cuda_ops, why, ext)
    return python


def record_builds(monkeypatch: pytest.MonkeyPatch, mmcv_runs: list | None = None) -> list[builder.Choices]:
    """The choices of every build that would have run, in order; those of `mmcv-wheel` runs go to
    `mmcv_runs` (when given) instead."""
    builds: list[builder.Choices] = []
    fake_probe(monkeypatch)

    def fake_build(
        env: Path,
        python: Path,
        choices: builder.Choices,
        *,
        stamp: dict | None = None,
        mmcv_only: bool = False,
        beside: object = (),
    ) -> Path:
        if mmcv_only:
            assert mmcv_runs is not None, "an mmcv-wheel run nobody expected"
            mmcv_runs.append(choices)
            return env / "wheel-folder"
        builds.append(choices)
        return write_built_env(env, choices)

    monkeypatch.setattr(builder, "_build", fake_build)
    return builds
