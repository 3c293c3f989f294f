"""The DALI device of a process: LOCAL_RANK's GPU when DALI runs on the GPU."""

from __future__ import annotations

from dali_streampetr.placement import local_device_id


def test_gpu_loader_goes_to_local_rank(monkeypatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert local_device_id("gpu") == 3
    assert local_device_id("cpu") is None


def test_without_local_rank_the_first_gpu(monkeypatch) -> None:
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert local_device_id("gpu") == 0
