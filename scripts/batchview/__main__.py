"""``python -m batchview``: print a batch summary and draw the six augmented images of the sample with
the most boxes, with the projected 3D boxes (and the 2D centres) into a PNG."""

from __future__ import annotations

import argparse
import io
import runpy
from pathlib import Path
from typing import Any

import numpy as np
import synthdata
from dali_streampetr import DaliStreamLoader, build_loader
from overlaytool import replace_file
from PIL import Image, ImageDraw

EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (0, 4), (1, 5), (2, 6), (3, 7)]


def summarize(batch: dict[str, Any]) -> str:
    """One line per key (shape/dtype or nesting), then one line per sample."""
    lines = []
    for key, value in batch.items():
        if hasattr(value, "shape"):
            lines.append(f"{key:14s} {tuple(value.shape)} {value.dtype}")
        else:
            lines.append(f"{key:14s} list[{len(value)}] x list[{len(value[0])}]")
    for b, info in enumerate(batch["dali"]):
        d = info["draw"]
        lines.append(
            f"sample {b}: frame {info['index']} token {info['token']} "
            f"prev_exists={int(batch['prev_exists'][b, 0])} "
            f"boxes={len(batch['gt_bboxes_3d'][b][0])} resize={d.resize:.3f} crop={d.crop} flip={d.flip} "
            f"rot={d.rot_angle:+.3f} scale={d.scale_ratio:.3f} bad={info['bad_cameras']}"
        )
    return "\n".join(lines)


def box_corners(boxes: np.ndarray) -> np.ndarray:
    """(N, 8, 3) corners of bottom-centred yawed boxes (first 4 at the bottom)."""
    signs = np.array(
        [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0], [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]],
        dtype=np.float64,
    )
    half = boxes[:, None, 3:6] * np.array([0.5, 0.5, 1.0])
    local = signs[None] * half
    c, s = np.cos(boxes[:, 6]), np.sin(boxes[:, 6])
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (N, 2, 2)
    xy = np.einsum("nij,nkj->nki", rot, local[..., :2])
    return np.concatenate([xy, local[..., 2:]], -1) + boxes[:, None, :3]


def project(lidar2img: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (..., 3) LiDAR points with a 4x4 ``lidar2img``: pixel (..., 2) and depth (...)."""
    hom = np.concatenate([points, np.ones(points.shape[:-1] + (1,))], -1) @ lidar2img.T
    depth = hom[..., 2]
    return hom[..., :2] / np.maximum(depth, 1e-6)[..., None], depth


def render(batch: dict[str, Any], loader: DaliStreamLoader, sample: int = 0) -> Image.Image:
    """The sample's N images (denormalised) in a 2 x N/2 grid with projected box edges."""
    cfg = loader.cfg
    imgs = batch["img"][sample, 0].cpu().numpy().transpose(0, 2, 3, 1)
    imgs = np.clip(imgs * np.array(cfg.std) + np.array(cfg.mean), 0, 255).astype(np.uint8)
    if not cfg.to_rgb:
        imgs = imgs[..., ::-1]
    boxes = batch["gt_bboxes_3d"][sample][0].numpy().astype(np.float64)
    corners = box_corners(boxes)
    tiles = []
    for cam, img in enumerate(imgs):
        tile = Image.fromarray(np.ascontiguousarray(img))
        draw = ImageDraw.Draw(tile)
        uv, depth = project(batch["lidar2img"][sample, 0, cam].numpy().astype(np.float64), corners)
        for n in range(len(boxes)):
            if (depth[n] > 0.5).all():
                for i, j in EDGES:
                    draw.line([tuple(uv[n, i]), tuple(uv[n, j])], fill=(255, 60, 60), width=1)
        for u, v in batch["centers2d"][sample][0][cam].numpy():
            draw.ellipse([u - 2, v - 2, u + 2, v + 2], outline=(60, 255, 60))
        draw.text((3, 3), loader.frames[batch["dali"][sample]["index"]].cam_names[cam], fill=(255, 255, 0))
        tiles.append(tile)
    cols = (len(tiles) + 1) // 2
    w, h = tiles[0].size
    sheet = Image.new("RGB", (cols * w, 2 * h))
    for i, tile in enumerate(tiles):
        sheet.paste(tile, ((i % cols) * w, (i // cols) * h))
    return sheet


def _config(path: str | None) -> Any:
    if path is None:
        return {}
    try:
        from mmcv import Config

        return Config.fromfile(path)
    except ImportError:
        return runpy.run_path(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--data-root", help="data root with the info pickle (default: the synthetic data set)"
    )
    parser.add_argument("--config", help="StreamPETR config file (default: the r50 seq values)")
    parser.add_argument("--out", default="out/inspect.png")
    parser.add_argument("--iters", type=int, default=1, help="batches to pull; the last one is drawn")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)
    if args.data_root is None:
        args.data_root = synthdata.ensure_dataset()
    overrides = {"num_threads": args.threads} if args.threads else {}
    with build_loader(_config(args.config), args.data_root, **overrides) as loader:
        for _ in range(args.iters):
            batch = next(loader)
        print(summarize(batch))
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        busiest = max(range(len(batch["gt_bboxes_3d"])), key=lambda b: len(batch["gt_bboxes_3d"][b][0]))
        image = render(batch, loader, sample=busiest)
        kind = Image.registered_extensions().get(out.suffix.lower(), "PNG")  # as save(out) picks it
        png = io.BytesIO()
        image.save(png, format=kind)
        replace_file(out, png.getvalue())
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
