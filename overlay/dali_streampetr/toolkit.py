"""The loader's measuring and replay points: the parts the project's own tools take apart, each
named here once so that a tool reaches the loader only through this module and the package's
entry points (:mod:`dali_streampetr`), never a module path of the package
(``tests/test_import_directions.py``). Imports torch, not mmcv."""

from __future__ import annotations

from .batch.transforms import box_corners, project
from .batch.wire import DECODE_SHAPE, DECODE_START
from .config.reader import dataset_values
from .frames.store import load_frames, read_frames
from .pipeline.source import ImageSource
from .sampling.eval_shards import frames_without_memory, scene_shards, scene_starts, upstream_chunks
from .sampling.plan import frame_draw
from .settings import NUSCENES_CLASSES, SINGLE_FRAME, SLIDING_WINDOW, STREAMING

__all__ = [
    "DECODE_SHAPE",  # the decode floor (loaderbench.sweep.floor): the wire columns of the decoded rows
    "DECODE_START",
    "ImageSource",  # the decode floor: the loader's own external source, its JPEGs and wire rows
    "NUSCENES_CLASSES",  # the frame store's key, as the loader builds it (loaderbench shards)
    "SINGLE_FRAME",  # the equivalence harness: the training modes a config declares
    "SLIDING_WINDOW",
    "STREAMING",
    "box_corners",  # the batch view (batchview): a batch's 3D boxes drawn into its images
    "dataset_values",  # the equivalence harness: data.<split>'s keys, upstream's defaults filled in
    "frame_draw",  # the equivalence harness: a frame's augmentation draw, replayed into upstream's code
    "frames_without_memory",  # the test shards (loaderbench shards): scene cuts and per-rank parts
    "load_frames",  # the frame store read alone (loaderbench scale checks, shards)
    "project",  # the batch view: 3D points into an image
    "read_frames",  # the per-frame reader the store replaced, against the store (scale checks)
    "scene_shards",
    "scene_starts",
    "upstream_chunks",
]
