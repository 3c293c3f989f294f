"""Candidates for the fast image path, each measured alone on the loader's own batches.

``python -m loaderbench.analysis.candidates [--threads T] [--batches N] [--profile r50|accv]`` runs, per
candidate, the whole image graph (decode of the rows the crop keeps, resize of the crop window, pad,
normalise) with one thing changed, and prints wall and CPU ms per batch beside the ROI decode alone
(the floor), with the candidate's pixel difference to the exact graph (mean abs and max, grey
levels, over every image). One-off analysis behind docs/benchmark.md's fast-path table; ``nox -s
bench`` measures the chosen path in the loader itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import cycle
from pathlib import Path

import numpy as np

from ..measure.proctree import Stopwatch
from .stages import batches

CUBIC = {"interp_type": "INTERP_CUBIC", "antialias": True}
LINEAR = {"interp_type": "INTERP_LINEAR", "antialias": True}
# name: (decoder options, resize options, pad folded into crop_mirror_normalize); resize None = the
# floor (decode only)
CANDIDATES: dict[str, tuple[dict, dict | None, bool]] = {
    "floor (ROI decode only)": ({}, None, False),
    "exact (cubic antialiased)": ({}, CUBIC, False),
    "use_fast_idct": ({"use_fast_idct": True}, CUBIC, False),
    "jpeg_fancy_upsampling": ({"jpeg_fancy_upsampling": True}, CUBIC, False),
    "cubic, pad in normalise": ({}, CUBIC, True),
    "linear antialiased": ({}, LINEAR, False),
    "linear, no antialias": ({}, {"interp_type": "INTERP_LINEAR", "antialias": False}, False),
    "lanczos3 antialiased": ({}, {"interp_type": "INTERP_LANCZOS3", "antialias": True}, False),
    "linear aa + fast_idct": ({"use_fast_idct": True}, LINEAR, False),
    "linear aa, pad in normalise": ({}, LINEAR, True),
}


def pipeline(cfg, data: list, decoder: dict, resize: dict | None, fold_pad: bool, threads: int):
    from nvidia.dali import fn, pipeline_def, types

    feed = cycle(data)
    fH, fW = cfg.aug.final_dim

    @pipeline_def(batch_size=len(data[0][0]), num_threads=threads, device_id=None, seed=0)
    def graph():
        enc, start, shape, rs, re, size, flip = fn.external_source(
            source=lambda: next(feed)[:7], num_outputs=7, batch=True
        )
        img = fn.decoders.image_slice(
            enc, start, shape, axis_names="HW", device="cpu", output_type=types.RGB, **decoder
        )
        if resize is None:
            return img
        kw = {**resize, "interp_type": getattr(types, resize["interp_type"])}
        img = fn.resize(img, size=size, roi_start=rs, roi_end=re, **kw)
        pad = {}
        if fold_pad:  # crop window = final_dim from the top left, padded with normalised black
            fill = [-m / s for m, s in zip(cfg.mean, cfg.std, strict=True)]
            pad = {"crop": [fH, fW], "crop_pos_x": 0.0, "crop_pos_y": 0.0}
            pad |= {"out_of_bounds_policy": "pad", "fill_values": fill}
        else:
            img = fn.pad(img, axis_names="HW", shape=[fH, fW])
        return fn.crop_mirror_normalize(
            img,
            mirror=flip,
            mean=list(cfg.mean),
            std=list(cfg.std),
            output_layout="CHW",
            dtype=types.FLOAT,
            **pad,
        )

    pipe = graph()
    pipe.build()
    return pipe


def grey_levels(out, cfg) -> np.ndarray:
    """The normalised CHW batch back in grey levels (N, C, H, W)."""
    std, mean = np.array(cfg.std)[:, None, None], np.array(cfg.mean)[:, None, None]
    return np.stack([np.asarray(x) * std + mean for x in out])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="loaderbench.analysis.candidates", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.data_root is None:
        from ..sweep.cases import default_data_root

        args.data_root = default_data_root()
    cfg, data = batches(args.data_root, args.batches)
    n = args.batches
    print(f"{len(data[0][0])} images per batch, {args.threads} thread(s), load {os.getloadavg()}")
    exact = None
    floor_cpu = None
    for name, (decoder, resize, fold_pad) in CANDIDATES.items():
        pipe = pipeline(cfg, data, decoder, resize, fold_pad, args.threads)
        first = pipe.run()[0]
        spans = []
        for _ in range(args.repeats):
            with Stopwatch() as sw:
                for _ in range(n):
                    pipe.run()
            spans.append(sw.span)
        wall = min(s.wall_s for s in spans) / n * 1e3
        cpu = min(s.cpu_s for s in spans) / n * 1e3
        floor_cpu = floor_cpu or cpu
        diff = ""
        if resize is not None:
            img = grey_levels(first, cfg)
            if exact is None:
                exact = img
            d = np.abs(img - exact)
            diff = f"  vs exact: mean {d.mean():.3f} max {d.max():.1f}"
        print(
            f"  {name:28s} {wall:7.1f} ms/batch {cpu:7.1f} CPU-ms/batch  x{cpu / floor_cpu:4.2f} floor{diff}"
        )
        del pipe
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
