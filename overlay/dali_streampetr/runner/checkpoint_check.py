"""Whether this loader can continue the data stream of a checkpoint (``--auto-resume`` skips one it
cannot; the patched ``tools/train.py`` asks ``loader.checkpoint_problem``). Imports torch and numpy
only.

A checkpoint is read here without running code from it: ``torch.load(weights_only=True)`` with
torch's allowlist and the numpy types an mmcv checkpoint may hold (:data:`CHECKPOINT_GLOBALS`, the
list the patched ``tools/train.py`` probes with); a file naming any other global is refused by
torch (``pickle.UnpicklingError``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..resume import META_KEY, LoaderStateMismatch, fitting_state

CHECKPOINT_GLOBALS = [
    np.core.multiarray._reconstruct, np.core.multiarray.scalar, np.ndarray, np.dtype,
    *sorted({type(np.dtype(c)) for c in "?bhilqBHILQefdFD"}, key=str),
]  # fmt: skip


def checkpoint_meta(checkpoint: str) -> dict[str, Any]:
    """The checkpoint's ``meta`` (a restricted load, see the module doc; mmap leaves the weights on
    disk)."""
    with torch.serialization.safe_globals(CHECKPOINT_GLOBALS):
        loaded = torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=True)
    return loaded.get("meta", {}) or {}


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
