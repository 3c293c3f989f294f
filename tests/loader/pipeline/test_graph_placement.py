"""The DALI device of a process: LOCAL_RANK's GPU when DALI runs on the GPU."""

from __future__ import annotations

from dali_streampetr.pipeline.graph import local_device_id, pipeline_device


def test_loader_gpu_goes_to_local_rank(monkeypatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert local_device_id("gpu") == 3
    assert local_device_id("cpu") is None


def test_without_local_rank_the_first_gpu(monkeypatch) -> None:
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert local_device_id("gpu") == 0


def test_the_cpu_path_keeps_the_device_it_is_given() -> None:
    """Only ``device='gpu'`` asks for CUDA (the one check, in ``pipeline_device``); on the CPU path
    the images stay in host memory, or go to the GPU the caller named."""
    assert pipeline_device("cpu", None) is None
    assert pipeline_device("cpu", 2) == 2
