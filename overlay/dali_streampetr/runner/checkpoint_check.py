"""Whether this loader can continue the data stream of a checkpoint (``--auto-resume`` skips one it
cannot; the patched ``tools/train.py`` asks ``loader.checkpoint_problem``). Imports torch only."""

from __future__ import annotations

from typing import Any

import torch

from ..resume import META_KEY, LoaderStateMismatch, fitting_state


def checkpoint_meta(checkpoint: str) -> dict[str, Any]:
    """The checkpoint's ``meta``; mmap leaves the weights on disk."""
    return torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=False).get("meta", {}) or {}


def checkpoint_problem(loader: Any, checkpoint: str) -> str | None:
    """Why ``loader`` (a :class:`~..loader.DaliStreamLoader`) cannot continue the data
    stream of ``checkpoint`` (its stored DALI state does not fit this run), or None. A checkpoint
    without a DALI state (the PyTorch loader's) is accepted, as ``--resume-from`` accepts it."""
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
