"""Checkpoint when SLURM warns, then requeue: ``CheckpointOnSignalHook`` (a config's custom hook).

``sbatch --requeue --signal=USR1@120`` sends SIGUSR1 to every task 120 s before the time limit. The
hook saves a checkpoint after the current iteration through ``runner.save_checkpoint`` (so the DALI
loader's stream state goes into it), then rank 0 runs ``scontrol requeue $SLURM_JOB_ID``, and
``--auto-resume`` continues from that checkpoint on the exact data stream.

After every iteration the ranks agree (one all-reduce) whether any was warned, so all save after the
same iteration. Until the first iteration SIGUSR1 is ignored, so that the loader's workers inherit
"ignore" (SLURM signals every process of the step; the default action would end a worker).

Register it with ``custom_imports = dict(imports=['dali_streampetr.runner.requeue'])`` and
``custom_hooks = [dict(type='CheckpointOnSignalHook')]`` (see docs/slurm.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import torch
import torch.distributed as dist
from mmcv.runner import HOOKS, CheckpointHook, Hook


@HOOKS.register_module()
class CheckpointOnSignalHook(Hook):
    """On ``signal_name`` save a checkpoint after the current iteration, then (``requeue=True``
    and under SLURM) requeue the job. ``save_optimizer`` as in ``CheckpointHook``."""

    def __init__(
        self, signal_name: str = "SIGUSR1", requeue: bool = True, save_optimizer: bool = True
    ) -> None:
        self.signum = signal.Signals[signal_name]
        self.requeue, self.save_optimizer = requeue, save_optimizer
        self.warned = False  # set by the handler, in this process
        self.due = False  # the ranks' agreement for the iteration `decided_at`
        self.decided_at: int | None = None
        self.handler_installed = False
        signal.signal(self.signum, signal.SIG_IGN)  # inherited by the loader's workers (see above)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.warned = True

    def before_train_iter(self, runner: Any) -> None:
        if not self.handler_installed:  # the loader's workers exist now: catch the signal from here on
            signal.signal(self.signum, self._on_signal)
            self.handler_installed = True

    def saves_checkpoint_after(self, runner: Any) -> bool:
        """Whether this hook saves a checkpoint after the running iteration, decided by the ranks
        together at the first call of the iteration (the DALI loader's state hook asks first)."""
        if self.decided_at != runner.iter:
            self.decided_at, self.due = runner.iter, _any_rank(self.warned)
            if self.due:
                self.warned = False
        return self.due

    def after_train_iter(self, runner: Any) -> None:
        if not self.saves_checkpoint_after(runner):
            return
        periodic = any(  # a CheckpointHook saves after this iteration anyway (its own test)
            isinstance(h, CheckpointHook)
            and not h.by_epoch
            and (h.every_n_iters(runner, h.interval) or (h.save_last and h.is_last_iter(runner)))
            for h in runner.hooks
        )
        if not periodic and runner.rank == 0:  # CheckpointHook saves on rank 0 only, as here
            runner.logger.info(f"{self.signum.name}: saving a checkpoint at {runner.iter + 1} iterations")
            runner.save_checkpoint(runner.work_dir, save_optimizer=self.save_optimizer)
        _barrier()  # the checkpoint is complete before any rank goes on (or the job is requeued)
        job = os.environ.get("SLURM_JOB_ID")
        if self.requeue and job and runner.rank == 0:
            runner.logger.info(f"{self.signum.name}: requeueing SLURM job {job}")
            done = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True)
            if done.returncode != 0:
                reason = done.stderr.strip()
                runner.logger.error(f"scontrol requeue {job} failed ({reason}); training goes on")


def _any_rank(flag: bool) -> bool:
    """True on every rank when ``flag`` is True on any (one all-reduce; the flag alone without
    a process group)."""
    if not (dist.is_available() and dist.is_initialized()):
        return flag
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    value = torch.tensor([int(flag)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def _barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
