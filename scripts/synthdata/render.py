"""Camera images: a textured road scene with the annotated boxes painted where they project.

Painter's algorithm (farthest object first, then its faces farthest first), so object-object occlusion in
the image matches the depth order StreamPETR's `_filter_invisible` assumes. Nothing but the annotated
objects is drawn in front of the ground and the sky, so a 2D box never covers an unannotated occluder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from . import geometry as g
from .catalog import COLOURS
from .world import IMG_H, IMG_W, Ann, Scene

JPEG_QUALITY = 92
_GRAIN_SIZE = 1024


@dataclass
class View:
    """One camera at one key frame."""

    k: np.ndarray
    global2cam: np.ndarray
    cam2global: np.ndarray


def view(scene: Scene, frame_idx: int, cam: str) -> View:
    cal = scene.calibs[cam]
    cam2global = scene.frames[frame_idx].cam_poses[cam].matrix @ cal.matrix
    return View(cal.intrinsic, g.rigid_inverse(cam2global), cam2global)


def _poly2d(v: View, poly_global: np.ndarray) -> np.ndarray | None:
    poly = g.clip_polygon_near(g.apply(v.global2cam, poly_global))
    if len(poly) < 3:
        return None
    return g.project(v.k, poly)


def object_faces(v: View, ann: Ann) -> list[tuple[float, int, np.ndarray]]:
    """(depth, face index, 2D polygon) of the visible-side faces of a box, farthest first."""
    corners = ann.corners
    cam_centre = v.cam2global[:3, 3]
    out = []
    for fi, face in enumerate(g.BOX_FACES):
        pts = corners[list(face)]
        poly = _poly2d(v, pts)
        if poly is None:
            continue
        out.append((float(np.linalg.norm(pts.mean(0) - cam_centre)), fi, poly))
    return sorted(out, key=lambda x: -x[0])


def draw_order(v: View, anns: list[Ann]) -> list[int]:
    """Indices of `anns` sorted farthest first (distance of the box centre to the camera)."""
    c = v.cam2global[:3, 3]
    return sorted(range(len(anns)), key=lambda i: -float(np.linalg.norm(anns[i].translation - c)))


def _in_canvas(poly: np.ndarray, scale: float = 1.0) -> bool:
    return bool(
        poly[:, 0].max() >= 0
        and poly[:, 0].min() <= IMG_W * scale
        and poly[:, 1].max() >= 0
        and poly[:, 1].min() <= IMG_H * scale
    )


def _clip_for_draw(poly: np.ndarray, scale: float) -> list[tuple[float, float]] | None:
    """Clip to a margin around the canvas (PIL misbehaves with huge coordinates)."""
    p = g.clip_polygon_rect(poly * scale + 64.0, IMG_W * scale + 128.0, IMG_H * scale + 128.0) - 64.0
    return [tuple(x) for x in p] if len(p) >= 3 else None


def visible_fractions(
    scene: Scene, frame_idx: int, cameras: tuple[str, ...], scale: float = 0.125
) -> list[float]:
    """Fraction of each annotation's projected area that is not hidden by nearer objects, over all cameras
    (NaN for an object seen by no camera). Rasterised at `scale` of the image size."""
    anns = scene.frames[frame_idx].anns
    seen = np.zeros(len(anns))
    total = np.zeros(len(anns))
    w, h = int(IMG_W * scale), int(IMG_H * scale)
    for cam in cameras:
        v = view(scene, frame_idx, cam)
        ids = Image.new("I", (w, h), 0)
        draw = ImageDraw.Draw(ids)
        for i in draw_order(v, anns):
            alone = Image.new("L", (w, h), 0)
            dalone = ImageDraw.Draw(alone)
            for _, _, poly in object_faces(v, anns[i]):
                p = _clip_for_draw(poly, scale)
                if p is not None:
                    draw.polygon(p, fill=i + 1)
                    dalone.polygon(p, fill=1)
            total[i] += np.asarray(alone).sum()
        counts = np.bincount(np.asarray(ids).ravel(), minlength=len(anns) + 1)
        seen += counts[1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (seen / total).tolist()


def _noise(rng: np.random.Generator, shape: tuple[int, int], cell: int) -> np.ndarray:
    """Smooth noise: a coarse Gaussian grid upsampled bicubically to `shape` (H, W)."""
    coarse = rng.standard_normal((shape[0] // cell + 2, shape[1] // cell + 2)).astype(np.float32)
    img = Image.fromarray(coarse, mode="F").resize((shape[1], shape[0]), Image.BICUBIC)
    return np.asarray(img)


def grain_tile(seed: int) -> np.ndarray:
    """A (1024, 1024, 3) int8 sensor-grain tile, shared by all images of a data set."""
    rng = np.random.default_rng([seed, 99])
    return np.clip(rng.normal(0, 3.2, (_GRAIN_SIZE, _GRAIN_SIZE, 3)), -12, 12).astype(np.int8)


def _background(v: View, rng: np.random.Generator, scale: int = 2) -> Image.Image:
    """Sky, roadside band and ground as an RGB image, computed at 1/`scale` resolution and upsampled
    (the fine texture comes from the sensor grain added later)."""
    w, h = IMG_W // scale, IMG_H // scale
    a = (v.cam2global[:3, :3] @ np.linalg.inv(v.k))[2]  # ray z-component as a function of (u, v, 1)
    u = np.arange(w, dtype=np.float64) * scale
    horizon = -(a[0] * u + a[2]) / a[1] if abs(a[1]) > 1e-9 else np.full(w, -1e9)
    rows = np.arange(h, dtype=np.float32)[:, None] * scale
    below = rows - horizon[None, :].astype(np.float32)  # > 0: ground
    sky_t = np.clip(-below / 500.0, 0, 1)[..., None]
    sky = (1 - sky_t) * np.array([205, 215, 225], np.float32) + sky_t * np.array([95, 140, 200], np.float32)
    clouds = _noise(rng, (h, w), 48) + 0.5 * _noise(rng, (h, w), 12)
    sky += 16.0 * clouds[..., None]
    ground_t = np.clip(below / 450.0, 0, 1)[..., None]
    ground = (1 - ground_t) * np.array([120, 118, 112], np.float32) + ground_t * np.array(
        [82, 80, 78], np.float32
    )
    tex = _noise(rng, (h, w), 20) + 0.6 * _noise(rng, (h, w), 3) + 0.45 * _noise(rng, (h, w), 1)
    ground += 9.0 * tex[..., None]
    img = np.where(below[..., None] > 0, ground, sky)
    # Roadside band (trees / facades) just above the horizon, drawn in image space.
    band_h = (28 + 22 * _noise(rng, (1, w), 24)[0] + 10 * _noise(rng, (1, w), 4)[0]).clip(4, None)
    in_band = (below < 0) & (below > -band_h[None, :])
    foliage = np.stack([45 + 25 * tex, 75 + 30 * tex, 40 + 15 * tex], -1) + 10 * clouds[..., None]
    img[in_band] = foliage[in_band]
    small = Image.fromarray(img.clip(0, 255).astype(np.uint8))
    return small.resize((IMG_W, IMG_H), Image.BILINEAR)


def _ground_strips(scene: Scene, frame_idx: int) -> list[tuple[np.ndarray, tuple[int, int, int]]]:
    """World-space road markings and kerbs near the ego as (4, 3) quads with colours."""
    ego_xy = scene.frames[frame_idx].lidar_pose.translation[:2]
    x0, y0, _ = scene.path.at(0.0)
    s_ego = scene.ego_speed * (scene.frames[frame_idx].timestamp - scene.frames[0].timestamp) / 1e6
    assert np.isfinite(x0 + y0) and np.all(np.isfinite(ego_xy))
    strips = []
    for lat, width, colour, dash in (
        (-1.75, 0.15, (225, 225, 215), None),
        (1.75, 0.15, (230, 200, 60), (3.0, 6.0)),
        (5.25, 0.15, (225, 225, 215), None),
        (-7.0, 2.6, (150, 148, 140), None),
        (7.2, 2.6, (150, 148, 140), None),
    ):
        step = dash[1] if dash else 4.0
        length = dash[0] if dash else 4.0
        for s in np.arange(np.floor((s_ego - 60) / step) * step, s_ego + 90, step):
            pts = []
            for ss, ll in (
                (s, lat - width / 2),
                (s + length, lat - width / 2),
                (s + length, lat + width / 2),
                (s, lat + width / 2),
            ):
                xy, _ = scene.path.point(float(ss), ll)
                pts.append([xy[0], xy[1], 0.01])
            strips.append((np.array(pts), colour))
    return strips


def render_image(scene: Scene, frame_idx: int, cam: str, seed: int, grain: np.ndarray) -> Image.Image:
    """The RGB image of one camera at one key frame (deterministic for the seed)."""
    rng = np.random.default_rng([seed, scene.index, frame_idx, 1000 + len(cam) * 7 + sum(map(ord, cam))])
    v = view(scene, frame_idx, cam)
    img = _background(v, rng)
    draw = ImageDraw.Draw(img)
    for quad, colour in _ground_strips(scene, frame_idx):
        poly = _poly2d(v, quad)
        if poly is not None and _in_canvas(poly):
            p = _clip_for_draw(poly, 1.0)
            if p is not None:
                draw.polygon(p, fill=colour)
    anns = scene.frames[frame_idx].anns
    shades = (1.0, 0.55, 0.8, 0.7, 0.9, 0.62)  # top, bottom, front, back, left, right
    for i in draw_order(v, anns):
        base = np.array(COLOURS.get(scene.instances[anns[i].instance].category, (128, 128, 128)), np.float32)
        for _, fi, poly in object_faces(v, anns[i]):
            p = _clip_for_draw(poly, 1.0)
            if p is None:
                continue
            col = tuple(int(c) for c in np.clip(base * shades[fi], 0, 255))
            draw.polygon(p, fill=col, outline=tuple(int(c * 0.5) for c in col))
    arr = np.asarray(img).astype(np.int16)
    oy, ox = rng.integers(0, _GRAIN_SIZE - IMG_H), rng.integers(0, _GRAIN_SIZE, 1)[0]
    tile = np.roll(grain, -int(ox), axis=1)[oy : oy + IMG_H]
    tile = np.concatenate([tile, tile[:, : IMG_W - _GRAIN_SIZE]], axis=1)
    arr += tile
    return Image.fromarray(arr.clip(0, 255).astype(np.uint8))


def save_jpeg(img: Image.Image, path: str) -> None:
    img.save(path, format="JPEG", quality=JPEG_QUALITY)
