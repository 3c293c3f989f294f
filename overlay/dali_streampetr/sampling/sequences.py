"""Sequence groups of the frames (upstream's ``_set_sequence_group_flag``) and ``prev_exists``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def group_flags(has_sweeps: Sequence[bool], seq_split_num: int | str) -> np.ndarray:
    """Group id per frame: a new sequence at every frame (but the first) with empty ``sweeps``,
    each sequence cut into ``seq_split_num`` consecutive pieces (``'all'``: one group per frame)."""
    flags = np.cumsum([i != 0 and not s for i, s in enumerate(has_sweeps)], dtype=np.int64)
    if seq_split_num == "all":
        return np.arange(len(flags), dtype=np.int64)
    if seq_split_num == 1:
        return flags
    sizes: list[int] = []
    for seq_id, length in enumerate(np.bincount(flags)):
        bounds = [*range(0, length, math.ceil(length / seq_split_num)), length]
        if len(bounds) - 1 != seq_split_num:
            raise ValueError(
                f"sequence {seq_id} has {length} frames and cannot be split into {seq_split_num} pieces "
                f"of ceil({length}/{seq_split_num}) frames (upstream asserts the same); "
                "use a smaller seq_split_num or longer scenes"
            )
        sizes.extend(int(s) for s in np.diff(bounds))
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def prev_exists(flags: np.ndarray) -> np.ndarray:
    """``not (index == 0 or flag[index - 1] != flag[index])`` for every frame."""
    out = np.zeros(len(flags), dtype=bool)
    out[1:] = flags[1:] == flags[:-1]
    return out
