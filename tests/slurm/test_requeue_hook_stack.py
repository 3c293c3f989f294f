"""Stack tier: CheckpointOnSignalHook in a real mmcv IterBasedRunner (tiny model, no SLURM).

SIGUSR1 during an iteration: a checkpoint at its end (the next iteration boundary), through
runner.save_checkpoint (latest.pth points at it), and the DALI loader's state hook sees it as a
checkpoint that is due; SIGUSR1 before the first iteration is ignored (the process lives on)."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest

pytestmark = pytest.mark.stack


class SignalAt:
    """A hook that sends this process SIGUSR1 in the given (1-based) iterations (0: before the
    run), and records for each iteration whether the DALI state hook's test says a checkpoint is due."""

    def __init__(self, iterations: set[int]) -> None:
        self.iterations, self.due = iterations, {}

    def __call__(self):
        from dali_streampetr.runner.state_hook import checkpoint_due
        from mmcv.runner import Hook

        outer = self

        class _Hook(Hook):
            def before_run(self, runner) -> None:
                if 0 in outer.iterations:
                    os.kill(os.getpid(), signal.SIGUSR1)

            def after_train_iter(self, runner) -> None:  # before the hook under test's
                if runner.iter + 1 in outer.iterations:
                    os.kill(os.getpid(), signal.SIGUSR1)
                outer.due[runner.iter + 1] = checkpoint_due(runner)

        return _Hook()


def run(tmp_path: Path, signal_at: SignalAt, iters: int = 6) -> Path:
    import torch
    from dali_streampetr.runner.requeue import CheckpointOnSignalHook
    from mmcv.runner import CheckpointHook, IterBasedRunner

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(2, 1)

        def train_step(self, data, optimizer):
            loss = self.fc(data).pow(2).mean()
            return {"loss": loss, "log_vars": {"loss": float(loss.detach())}, "num_samples": len(data)}

    model = Tiny()
    loader = torch.utils.data.DataLoader(torch.ones(64, 2), batch_size=2)
    runner = IterBasedRunner(
        model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01), work_dir=str(tmp_path),
        logger=logging.getLogger("requeue-test"), max_iters=iters,
    )  # fmt: skip
    runner.register_optimizer_hook({"grad_clip": None})
    runner.register_hook(CheckpointHook(interval=100, by_epoch=False, save_last=False))
    runner.register_hook(CheckpointOnSignalHook(requeue=False), priority="VERY_LOW")
    runner.register_hook(signal_at(), priority="ABOVE_NORMAL")
    runner.run([loader], [("train", iters)])
    return tmp_path


@pytest.fixture(autouse=True)
def default_sigusr1():
    yield
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


def test_a_signal_checkpoints_at_the_iteration_boundary(tmp_path: Path) -> None:
    import torch

    at = SignalAt({2, 4})
    work = run(tmp_path, at)
    assert sorted(p.name for p in work.glob("iter_*.pth")) == ["iter_2.pth", "iter_4.pth"]
    assert os.readlink(work / "latest.pth") == "iter_4.pth"
    meta = torch.load(work / "iter_2.pth", map_location="cpu", weights_only=False)["meta"]
    assert meta["iter"] == 1  # mmcv's convention: saved in after_train_iter of iteration 2
    assert at.due == {1: False, 2: True, 3: False, 4: True, 5: False, 6: False}


def test_a_signal_before_the_first_iteration_is_ignored(tmp_path: Path) -> None:
    at = SignalAt({0})
    work = run(tmp_path, at, iters=3)
    assert not list(work.glob("iter_*.pth")) and not any(at.due.values())
