"""The parts of the loader that the project's own tools take apart (scripts/: the equivalence harness
replays draws into upstream's code, the benchmark times the image source and the graph's stages and
splits a store's scenes into test shards, the batch view draws a batch): re-exported here, so that a
tool names the loader's parts only through this module and the package's entry points
(:mod:`dali_streampetr`), never a module path of the package (``tests/test_import_directions.py``).
Imports torch, not mmcv."""

from __future__ import annotations

from .batch.transforms import box_corners, project
from .batch.wire import DECODE_SHAPE, DECODE_START, FLIP, OUT_SIZE, ROI_END, ROI_START
from .config.reader import dataset_values
from .frames.records import Frame
from .frames.store import load_frames, read_frames
from .frames.store_file import write_atomic
from .pipeline.source import ImageSource
from .sampling.eval_shards import frames_without_memory, scene_shards, scene_starts, upstream_chunks
from .sampling.modes import Streaming
from .sampling.plan import frame_draw
from .settings import NUSCENES_CLASSES, SINGLE_FRAME, SLIDING_WINDOW, STREAMING, AugConfig

__all__ = [
    "DECODE_SHAPE",
    "DECODE_START",
    "FLIP",
    "NUSCENES_CLASSES",
    "OUT_SIZE",
    "ROI_END",
    "ROI_START",
    "SINGLE_FRAME",
    "SLIDING_WINDOW",
    "STREAMING",
    "AugConfig",
    "Frame",
    "ImageSource",
    "Streaming",
    "box_corners",
    "dataset_values",
    "frame_draw",
    "frames_without_memory",
    "load_frames",
    "project",
    "read_frames",
    "scene_shards",
    "scene_starts",
    "upstream_chunks",
    "write_atomic",
]
