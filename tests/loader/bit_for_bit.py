"""Bit-for-bit equality of what the loader makes, recursively, naming where two values part."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
import torch
from dali_streampetr.frames.records import Frame


def assert_same(a: Any, b: Any, where: str = "batch") -> None:
    """``a`` and ``b`` equal exactly: the same types, arrays of the same dtype, shape and bytes,
    tensors of the same dtype, shape and values, recursively through dicts (keys in order), sequences,
    dataclasses and plain objects (mmcv's DataContainer, box holders); the assertion names the first
    place they differ."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where  # the same keys in the same order
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif is_dataclass(a):
        for f in fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif hasattr(a, "__dict__") and not isinstance(a, type):  # e.g. mmdet3d-free box holders
        assert_same(vars(a), vars(b), where)
    else:
        assert a == b, (where, a, b)


def assert_same_frames(reference: list[Frame], frames: Any) -> None:
    """Every field of every frame of ``frames`` (records or the frame store's views) is the
    reference's, bit for bit."""
    assert len(frames) == len(reference)
    for i, want in enumerate(reference):
        for f in fields(Frame):
            assert_same(getattr(want, f.name), getattr(frames[i], f.name), f"frames[{i}].{f.name}")
