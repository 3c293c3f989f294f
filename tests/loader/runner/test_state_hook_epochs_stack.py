"""Stack tier: the single-frame DALI loader in a real mmcv EpochBasedRunner (tiny model): every epoch
is upstream's DistributedGroupSampler epoch and ends where the runner expects, the checkpoint after
each epoch holds the loader state, and a run resumed from an epoch checkpoint continues the stream."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from loader_data import tiny_config

pytestmark = pytest.mark.stack


def single_frame_config() -> dict:
    cfg = tiny_config()
    cfg["data"]["train"].update(seq_mode=False, queue_length=1, filter_empty_gt=True)
    return cfg


def run(root: Path, work_dir: Path, epochs: int, resume_from: Path | None = None) -> tuple[list[int], object]:
    """Train ``epochs`` epochs (from ``resume_from``, if given); the frames every step received."""
    import torch
    from dali_streampetr import build_dali_loader, to_collated
    from mmcv.runner import CheckpointHook, EpochBasedRunner

    seen: list[int] = []

    def collate(batch):
        seen.extend(r["index"] for r in batch["dali"])
        return to_collated(batch)

    cfg = {**single_frame_config(), "resume_from": str(resume_from) if resume_from else None}
    loader = build_dali_loader(cfg, data_root=root, rank=0, world_size=1, seed=7, collate=collate)

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))

        def train_step(self, data, optimizer):
            loss = (self.w * data["img"].data[0].mean()).pow(2)
            return {"loss": loss, "log_vars": {"loss": float(loss.detach())}, "num_samples": 2}

    model = Tiny()
    runner = EpochBasedRunner(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
                              work_dir=str(work_dir), logger=logging.getLogger("epoch-test"),
                              max_epochs=epochs)  # fmt: skip
    runner.register_optimizer_hook({"grad_clip": None})
    runner.register_hook(CheckpointHook(interval=1, by_epoch=True))
    for hook, priority in loader.runner_hooks:  # the loader's stream position in the checkpoints
        runner.register_hook(hook, priority=priority)
    if resume_from:
        runner.resume(str(resume_from), map_location="cpu")
    try:
        runner.run([loader], [("train", 1)])
    finally:
        loader.close()
    return seen, loader


def test_epochs_checkpoints_and_resume_follow_upstreams_epoch_stream(tiny_root, tmp_path) -> None:
    import torch

    seen, loader = run(tiny_root, tmp_path / "straight", epochs=2)
    sampler = loader.loader.sampler
    assert len(loader) == 6 and seen == sampler.indices(0) + sampler.indices(1)
    meta = torch.load(tmp_path / "straight" / "epoch_1.pth", map_location="cpu", weights_only=False)["meta"]
    (state,) = meta["dali_loader"]["ranks"]
    assert (state["iteration"], state["epoch"], state["training_mode"]) == (6, 1, "single_frame")
    resumed, _ = run(
        tiny_root, tmp_path / "resumed", epochs=3, resume_from=tmp_path / "straight" / "epoch_1.pth"
    )
    assert resumed == sampler.indices(1) + sampler.indices(2)
