"""The loader's measuring and replay points: the parts the project's own tools take apart, each
named here once so that a tool reaches the loader only through this module and the package's
entry points (:mod:`dali_streampetr`), never a module path of the package
(``tests/test_import_directions.py``); docs/loader.md lists each with its tool. Imports torch, not mmcv."""

from __future__ import annotations

from .batch.wire import DECODE_WINDOW
from .config.reader import declared_mode
from .frames.store import load_frames, read_frames
from .pipeline.source import ImageSource
from .sampling.eval_shards import frames_without_memory, scene_shards, scene_starts, upstream_chunks
from .sampling.plan import frame_draw

__all__ = [
    "DECODE_WINDOW",
    "ImageSource",
    "declared_mode",
    "frame_draw",
    "frames_without_memory",
    "load_frames",
    "read_frames",
    "scene_shards",
    "scene_starts",
    "upstream_chunks",
]
