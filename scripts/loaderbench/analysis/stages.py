"""Where the DALI graph's time goes: cumulative stages of the loader's graph and the naive graph.

``python -m loaderbench.analysis.stages [--threads T] [--batches N]`` decodes the loader's own batches (r50
defaults of :class:`dali_streampetr.LoaderConfig`, the synthetic data set) through

- ``decode-full`` / ``decode-roi``: the decoder alone (full image / the rows the crop keeps),
- ``+resize``: + the antialiased cubic resize of exactly the crop window (crop before resize),
- ``+pad``, ``+normalise``: + black padding to ``final_dim`` and crop_mirror_normalize (= the graph),
- ``naive``: full decode, resize of the whole image to ``resize_dims``, then crop/pad + normalise,

and prints wall ms and CPU ms per batch for each. One-off analysis; ``nox -s bench`` does not run it.
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import cycle
from pathlib import Path

import numpy as np

from ..measure.proctree import Stopwatch

STAGES = ("decode-full", "decode-roi", "+resize", "+pad", "+normalise", "naive")


def batches(data_root: Path, count: int) -> tuple[object, list[tuple[list[np.ndarray], ...]]]:
    """The loader config and, per iteration, the external-source outputs + naive resize/crop params."""
    from dali_streampetr import DaliStreamLoader, LoaderConfig
    from dali_streampetr.toolkit import (
        DECODE_SHAPE,
        DECODE_START,
        FLIP,
        OUT_SIZE,
        ROI_END,
        ROI_START,
        ImageSource,
        Streaming,
    )

    cfg = LoaderConfig(roi_decode=True, mode=Streaming())
    loader = DaliStreamLoader(cfg, data_root)
    source = ImageSource(cfg, loader.planner, loader.frames, 0)
    out = []
    for i in range(count):
        n = loader.n_cams
        draws = [s.draw for s in source.planner.plan(i) for _ in range(n)]
        dims = [np.array(d.resize_dims[::-1], dtype=np.float32) for d in draws]
        crops = [np.array(d.crop[1::-1], dtype=np.int32) for d in draws]
        jpegs, rows, _ = source(i)
        params = [
            [np.array(r[part], dtype=dtype) for r in rows]
            for part, dtype in ((DECODE_START, np.int32), (DECODE_SHAPE, np.int32), (ROI_START, np.float32),
                                (ROI_END, np.float32), (OUT_SIZE, np.float32), (FLIP, np.int32))
        ]  # fmt: skip
        out.append((jpegs, *params, dims, crops))
    return cfg, out


def pipeline(cfg, data: list, stage: str, threads: int):
    from nvidia.dali import fn, pipeline_def, types

    feed = cycle(data)
    fH, fW = cfg.aug.final_dim

    @pipeline_def(batch_size=len(data[0][0]), num_threads=threads, device_id=None, seed=0)
    def graph():
        enc, start, shape, rs, re, size, flip, dims, crop = fn.external_source(
            source=lambda: next(feed), num_outputs=9, batch=True
        )
        kw = {"device": "cpu", "output_type": types.RGB}
        if stage in ("decode-full", "naive"):
            img = fn.decoders.image(enc, **kw)
        else:
            img = fn.decoders.image_slice(enc, start, shape, axis_names="HW", **kw)
        if stage == "naive":
            img = fn.resize(img, size=dims, interp_type=types.INTERP_CUBIC, antialias=True)
            img = fn.slice(
                img,
                crop,
                [fH, fW],
                axis_names="HW",
                out_of_bounds_policy="pad",
                normalized_anchor=False,
                normalized_shape=False,
            )
        elif stage not in ("decode-full", "decode-roi"):
            img = fn.resize(
                img, size=size, roi_start=rs, roi_end=re, interp_type=types.INTERP_CUBIC, antialias=True
            )
            if stage in ("+pad", "+normalise"):
                img = fn.pad(img, axis_names="HW", shape=[fH, fW])
        if stage in ("+normalise", "naive"):
            img = fn.crop_mirror_normalize(
                img,
                mirror=flip,
                mean=list(cfg.mean),
                std=list(cfg.std),
                output_layout="CHW",
                dtype=types.FLOAT,
            )
        return img

    pipe = graph()
    pipe.build()
    return pipe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="loaderbench.analysis.stages", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", type=int, default=12)
    args = ap.parse_args(argv)
    if args.data_root is None:
        from ..sweep.cases import default_data_root

        args.data_root = default_data_root()
    cfg, data = batches(args.data_root, args.batches)
    print(f"{len(data[0][0])} images per batch, {args.threads} thread(s), load {os.getloadavg()[0]:.2f}")
    for stage in STAGES:
        pipe = pipeline(cfg, data, stage, args.threads)
        for _ in range(3):
            pipe.run()
        with Stopwatch() as sw:
            for _ in range(args.batches):
                pipe.run()
        n = args.batches
        wall, cpu = sw.span.wall_s / n * 1e3, sw.span.cpu_s / n * 1e3
        print(f"  {stage:12s} {wall:7.1f} ms/batch  {cpu:7.1f} CPU-ms/batch")
        del pipe
    print(f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
