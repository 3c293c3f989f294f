"""The DALI loader's stream position in checkpoints: the mmcv hook that keeps it in every checkpoint
and continues it on resume, and whether a checkpoint's stream fits this loader (``--auto-resume``
skips one that does not). Checkpoints are read with ``torch.load(weights_only=True)``, allowing the
numpy types an mmcv checkpoint may hold (:data:`CHECKPOINT_GLOBALS`): no code runs from them.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from mmcv.runner import CheckpointHook, Hook
from mmdet.utils import get_root_logger

from ..checkpoint_numpy import checkpoint_globals
from ..loader import DaliStreamLoader
from ..resume import META_KEY, LoaderStateMismatch, fitting_state

CHECKPOINT_GLOBALS = checkpoint_globals()


def checkpoint_meta(checkpoint: str) -> dict[str, Any]:
    """The checkpoint's ``meta`` (a restricted load, see the module doc; mmap leaves the weights on
    disk)."""
    with torch.serialization.safe_globals(CHECKPOINT_GLOBALS):
        loaded = torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=True)
    return loaded.get("meta", {}) or {}


def checkpoint_problem(loader: Any, checkpoint: str) -> str | None:
    """Why ``loader`` cannot continue the data stream of ``checkpoint``, or None (also for a checkpoint
    without a DALI state, which ``--resume-from`` accepts)."""
    meta = checkpoint_meta(checkpoint)
    if META_KEY not in meta:
        return None
    try:
        fitting_state(
            meta[META_KEY], loader.state_dict(), iteration=int(meta.get("iter", 0)), checkpoint=checkpoint
        )
    except LoaderStateMismatch as exc:
        return f"its DALI loader state does not fit this run ({exc})"
    return None


class DaliStreamStateHook(Hook):
    """Every checkpoint carries each rank's loader state (``meta['dali_loader']['ranks']``); on resume
    each rank continues at the runner's iteration once its entry fits (:func:`..resume.fitting_state`)."""

    def __init__(self, loader: DaliStreamLoader, cfg: Any) -> None:
        self.loader, self.cfg = loader, cfg

    def before_run(self, runner: Any) -> None:
        checkpoint = self.cfg.get("resume_from")
        if not checkpoint:
            return
        meta = checkpoint_meta(checkpoint)  # the weights were read once already by resume()
        mine = self.loader.state_dict()
        if META_KEY not in meta:
            get_root_logger().warning(
                f"{checkpoint} holds no DALI loader state (written by the PyTorch loader?): the DALI "
                f"stream continues at iteration {runner.iter} without checking that it is the same stream"
            )
            state = {**mine, "iteration": runner.iter}
        else:
            state = fitting_state(meta[META_KEY], mine, iteration=runner.iter, checkpoint=checkpoint)
        self.loader.load_state_dict(state)
        get_root_logger().info(f"DALI loader: resumed the data stream at iteration {runner.iter}")

    def after_train_iter(self, runner: Any) -> None:
        if checkpoint_due(runner, by_epoch=False):
            self._store(runner)

    def after_train_epoch(self, runner: Any) -> None:
        if checkpoint_due(runner, by_epoch=True):
            self._store(runner)

    def _store(self, runner: Any) -> None:
        mine = self.loader.state_dict()
        ranks = [mine]
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            ranks = [None] * dist.get_world_size()
            dist.all_gather_object(ranks, mine)
        if runner.meta is None:
            runner.meta = {}
        runner.meta[META_KEY] = {"ranks": ranks}


def checkpoint_due(runner: Any, *, by_epoch: bool = False) -> bool:
    """Whether a CheckpointHook saves after this iteration or epoch (its own test), or another hook
    says so (``saves_checkpoint_after``); every rank reaches the same answer."""

    def due(h: Any) -> bool:
        if not isinstance(h, CheckpointHook):
            return not by_epoch and getattr(h, "saves_checkpoint_after", lambda runner: False)(runner)
        if h.by_epoch != by_epoch:
            return False
        if by_epoch:
            return h.every_n_epochs(runner, h.interval) or (h.save_last and h.is_last_epoch(runner))
        return h.every_n_iters(runner, h.interval) or (h.save_last and h.is_last_iter(runner))

    return any(due(h) for h in runner.hooks)
