"""The decode floor: DALI's CPU decoder alone on the loader's own JPEGs and ROI windows, held in
memory (``python -m loaderbench.sweep.floor '<json>'``, as :mod:`.runcase`)."""

from __future__ import annotations

import os
import sys
from itertools import cycle
from pathlib import Path
from typing import Any

import numpy as np

from ..measure.proctree import Stopwatch
from .cases import enter_checkout, load_config
from .runcase import answer


def encoded_batches(cfg: Any, data_root: Path, count: int) -> list[tuple[list[np.ndarray], ...]]:
    """``(jpegs, decode_starts, decode_shapes)`` of the loader's first ``count`` iterations."""
    from dali_streampetr import build_loader, loader_config_from
    from dali_streampetr.toolkit import DECODE_WINDOW, ImageSource

    lcfg = loader_config_from(cfg, roi_decode=True)
    loader = build_loader(lcfg, data_root, rank=0, world_size=1, seed=0)
    source = ImageSource(lcfg, loader.planner, loader.frames, 0)
    out = []
    for i in range(count):
        jpegs, rows, _ = source(i)
        windows = [r[DECODE_WINDOW].astype(np.int32) for r in rows]
        out.append((jpegs, [w[:2] for w in windows], [w[2:] for w in windows]))
    return out


def decode_pipeline(batches: list[tuple[list[np.ndarray], ...]], threads: int, roi: bool, to_rgb: bool):
    """A built pipeline that decodes the cached batches in turn (full or ROI) on ``threads`` threads."""
    from nvidia.dali import fn, pipeline_def, types

    feed = cycle(batches)

    def source():
        return next(feed)

    @pipeline_def(batch_size=len(batches[0][0]), num_threads=threads, device_id=None, seed=0)
    def graph():
        data, start, shape = fn.external_source(source=source, num_outputs=3, batch=True)
        kw = {"device": "cpu", "output_type": types.RGB if to_rgb else types.BGR}
        if roi:
            return fn.decoders.image_slice(data, start, shape, axis_names="HW", **kw)
        return fn.decoders.image(data, **kw)

    pipe = graph()
    pipe.build()
    return pipe


def run(spec: dict[str, Any]) -> dict[str, Any]:
    enter_checkout()
    data_root = Path(spec["data_root"])
    cfg = load_config(spec.get("profile", "r50"), data_root)
    warmup, n, repeats = spec["warmup"], spec["batches"], spec["repeats"]
    batches = encoded_batches(cfg, data_root, warmup + n * repeats)
    to_rgb = bool(cfg.img_norm_cfg.get("to_rgb", True))
    load0 = os.getloadavg()
    results = []
    for threads in spec.get("threads", (1, 2)):
        for roi in (False, True):
            pipe = decode_pipeline(batches, threads, roi, to_rgb)
            for _ in range(warmup):
                pipe.run()
            spans = []
            for _ in range(repeats):
                with Stopwatch() as sw:
                    for _ in range(n):
                        pipe.run()
                spans.append(sw.span)
            results.append(
                {
                    "mode": "roi" if roi else "full",
                    "threads": threads,
                    "repeat_wall_s": [s.wall_s for s in spans],
                    "repeat_cpu_s": [s.cpu_s for s in spans],
                }
            )
            del pipe
    rows = [int(s[0]) for b in batches for s in b[2]]
    return {
        "profile": spec.get("profile", "r50"),
        "images_per_batch": len(batches[0][0]),
        "samples_per_batch": int(cfg.data.samples_per_gpu),
        "mean_jpeg_kb": float(np.mean([len(j) for b in batches for j in b[0]]) / 1024),
        "mean_roi_rows": float(np.mean(rows)),
        "batches": n,
        "repeats": repeats,
        "floors": results,
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
    }


if __name__ == "__main__":
    sys.exit(answer(run))
