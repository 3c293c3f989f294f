"""Write a whole data set: scenes -> tables, LIDAR_TOP files, maps, camera JPEGs, info pickles."""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from . import render
from .catalog import CAMERAS, MINI_SCENES
from .infos import write_infos
from .layout import build_scene
from .tables import Names, build_tables, write_lidar, write_maps, write_tables
from .world import Scene


def _visibility_token(frac: float) -> str:
    if not math.isfinite(frac):
        return "1"
    return "1" if frac < 0.4 else "2" if frac < 0.6 else "3" if frac < 0.8 else "4"


def make_scenes(scenes: int, samples_per_scene: int, seed: int) -> list[Scene]:
    """The in-memory world, with per-annotation visibility computed from the rendered occlusion."""
    out = []
    for index, (name, split) in enumerate(MINI_SCENES[:scenes]):  # official v1.0-mini names, interleaved
        scene = build_scene(index, name, split, samples_per_scene, seed)
        for k, frame in enumerate(scene.frames):
            for ann, frac in zip(frame.anns, render.visible_fractions(scene, k, CAMERAS), strict=True):
                ann.visibility = _visibility_token(frac)
        out.append(scene)
    return out


def _render_scene(args: tuple[Scene, str, int]) -> int:
    scene, root, seed = args
    grain = render.grain_tile(seed)
    names = Names(seed)
    n = 0
    for k in range(len(scene.frames)):
        for cam in CAMERAS:
            path = Path(root) / names.filename(scene, k, cam)
            path.parent.mkdir(parents=True, exist_ok=True)
            render.save_jpeg(render.render_image(scene, k, cam, seed, grain), str(path))
            n += 1
    return n


def generate(root: Path, scenes: int, samples_per_scene: int, seed: int, jobs: int = 1) -> None:
    """Write the data set into `root` (which should be empty)."""
    root.mkdir(parents=True, exist_ok=True)
    world = make_scenes(scenes, samples_per_scene, seed)
    names = Names(seed)
    tables = build_tables(world, names)
    write_tables(root, tables)
    write_maps(root, tables, seed)
    write_lidar(root, world, names)
    work = [(scene, str(root), seed) for scene in world]
    if jobs > 1:
        # spawn, not fork: the caller may already run threads (DALI, torch) that a fork would deadlock
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_render_scene, work))
    else:
        for item in work:
            _render_scene(item)
    write_infos(root, tables)


def jpeg_stats(root: Path) -> dict[str, float]:
    """Size statistics (KB) of the camera JPEGs under `root`."""
    sizes = np.array([p.stat().st_size for p in (root / "samples").glob("CAM_*/*.jpg")]) / 1000.0
    return {
        "count": float(len(sizes)),
        "min_kb": sizes.min(),
        "median_kb": float(np.median(sizes)),
        "max_kb": sizes.max(),
    }
