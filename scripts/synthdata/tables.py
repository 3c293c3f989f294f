"""nuScenes tables (the 13 JSON files of `v1.0-mini`), LIDAR_TOP point clouds and map masks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image

from . import geometry as g
from .catalog import ATTRIBUTES, CAMERAS, CATEGORIES, LIDAR, VISIBILITIES
from .world import IMG_H, IMG_W, Scene

VERSION = "v1.0-mini"
TABLES = (
    "category",
    "attribute",
    "visibility",
    "instance",
    "sensor",
    "calibrated_sensor",
    "ego_pose",
    "log",
    "scene",
    "sample",
    "sample_data",
    "sample_annotation",
    "map",
)


class Names:
    """Deterministic tokens and file names shared by the tables and the info writer."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def token(self, kind: str, *key: object) -> str:
        text = "/".join([str(self.seed), kind, *map(str, key)])
        return hashlib.md5(text.encode()).hexdigest()

    def sample(self, scene: Scene, k: int) -> str:
        return self.token("sample", scene.index, k)

    def sample_data(self, scene: Scene, k: int, channel: str) -> str:
        return self.token("sample_data", scene.index, k, channel)

    def ann(self, scene: Scene, k: int, instance: int) -> str:
        return self.token("ann", scene.index, k, instance)

    def filename(self, scene: Scene, k: int, channel: str) -> str:
        frame = scene.frames[k]
        if channel == LIDAR:
            return f"samples/{LIDAR}/{scene.logfile}__{LIDAR}__{frame.timestamp}.pcd.bin"
        ts = frame.cam_poses[channel].timestamp
        return f"samples/{channel}/{scene.logfile}__{channel}__{ts}.jpg"


def _chain(tokens: list[str]) -> list[tuple[str, str]]:
    """(prev, next) for each element of an ordered token list."""
    return [
        (tokens[i - 1] if i else "", tokens[i + 1] if i + 1 < len(tokens) else "") for i in range(len(tokens))
    ]


def build_tables(scenes: list[Scene], names: Names) -> dict[str, list[dict]]:
    """All 13 tables as lists of records, samples ordered scene by scene."""
    t: dict[str, list[dict]] = {name: [] for name in TABLES}
    cat_tok = {c: names.token("category", c) for c in CATEGORIES}
    attr_tok = {a: names.token("attribute", a) for a in ATTRIBUTES}
    t["category"] = [{"token": cat_tok[c], "name": c, "description": f"synthetic {c}"} for c in CATEGORIES]
    t["attribute"] = [{"token": attr_tok[a], "name": a, "description": f"synthetic {a}"} for a in ATTRIBUTES]
    t["visibility"] = [
        {"token": tok, "level": level, "description": f"visibility of whole object is {level[1:]} %"}
        for tok, level in VISIBILITIES
    ]
    channels = (LIDAR, *CAMERAS)
    t["sensor"] = [
        {"token": names.token("sensor", ch), "channel": ch, "modality": "lidar" if ch == LIDAR else "camera"}
        for ch in channels
    ]
    maps: dict[str, list[str]] = {}
    for scene in scenes:
        log_tok = names.token("log", scene.index)
        maps.setdefault(scene.location, []).append(log_tok)
        t["log"].append(
            {
                "token": log_tok,
                "logfile": scene.logfile,
                "vehicle": "n015",
                "date_captured": scene.date,
                "location": scene.location,
            }
        )
        cs_tok = {}
        for ch in channels:
            cal = scene.calibs[ch]
            cs_tok[ch] = names.token("calibrated_sensor", scene.index, ch)
            t["calibrated_sensor"].append(
                {
                    "token": cs_tok[ch],
                    "sensor_token": names.token("sensor", ch),
                    "translation": cal.translation.tolist(),
                    "rotation": cal.rotation.tolist(),
                    "camera_intrinsic": [] if cal.intrinsic is None else cal.intrinsic.tolist(),
                }
            )
        n = len(scene.frames)
        sample_toks = [names.sample(scene, k) for k in range(n)]
        t["scene"].append(
            {
                "token": names.token("scene", scene.index),
                "log_token": log_tok,
                "nbr_samples": n,
                "first_sample_token": sample_toks[0],
                "last_sample_token": sample_toks[-1],
                "name": scene.name,
                "description": f"synthetic, {scene.split} split, ego speed {scene.ego_speed:.1f} m/s",
            }
        )
        for k, (prev, nxt) in enumerate(_chain(sample_toks)):
            t["sample"].append(
                {
                    "token": sample_toks[k],
                    "timestamp": scene.frames[k].timestamp,
                    "prev": prev,
                    "next": nxt,
                    "scene_token": names.token("scene", scene.index),
                }
            )
        for ch in channels:
            sd_toks = [names.sample_data(scene, k, ch) for k in range(n)]
            for k, (prev, nxt) in enumerate(_chain(sd_toks)):
                frame = scene.frames[k]
                pose = frame.lidar_pose if ch == LIDAR else frame.cam_poses[ch]
                pose_tok = names.token("ego_pose", scene.index, k, ch)
                t["ego_pose"].append(
                    {
                        "token": pose_tok,
                        "timestamp": pose.timestamp,
                        "rotation": pose.rotation.tolist(),
                        "translation": pose.translation.tolist(),
                    }
                )
                is_cam = ch != LIDAR
                t["sample_data"].append(
                    {
                        "token": sd_toks[k],
                        "sample_token": sample_toks[k],
                        "ego_pose_token": pose_tok,
                        "calibrated_sensor_token": cs_tok[ch],
                        "timestamp": pose.timestamp,
                        "fileformat": "jpg" if is_cam else "pcd",
                        "is_key_frame": True,
                        "height": IMG_H if is_cam else 0,
                        "width": IMG_W if is_cam else 0,
                        "filename": names.filename(scene, k, ch),
                        "prev": prev,
                        "next": nxt,
                    }
                )
        links = {}  # (key frame, instance) -> its annotation's (prev, next)
        for i, inst in enumerate(scene.instances):
            ks = [k for k in range(n) if any(a.instance == i for a in scene.frames[k].anns)]
            ann_toks = [names.ann(scene, k, i) for k in ks]
            links.update({(k, i): chain for k, chain in zip(ks, _chain(ann_toks), strict=True)})
            t["instance"].append(
                {
                    "token": names.token("instance", scene.index, i),
                    "category_token": cat_tok[inst.category],
                    "nbr_annotations": len(ks),
                    "first_annotation_token": ann_toks[0],
                    "last_annotation_token": ann_toks[-1],
                }
            )
        for k, frame in enumerate(scene.frames):
            for a in frame.anns:
                prev, nxt = links[(k, a.instance)]
                t["sample_annotation"].append(
                    {
                        "token": names.ann(scene, k, a.instance),
                        "sample_token": sample_toks[k],
                        "instance_token": names.token("instance", scene.index, a.instance),
                        "visibility_token": a.visibility,
                        "attribute_tokens": [attr_tok[x] for x in a.attributes],
                        "translation": a.translation.tolist(),
                        "size": a.size.tolist(),
                        "rotation": a.rotation.tolist(),
                        "prev": prev,
                        "next": nxt,
                        "num_lidar_pts": a.num_lidar_pts,
                        "num_radar_pts": a.num_radar_pts,
                    }
                )
    for loc, logs in maps.items():
        tok = names.token("map", loc)
        t["map"].append(
            {"category": "semantic_prior", "token": tok, "filename": f"maps/{tok}.png", "log_tokens": logs}
        )
    return t


def write_tables(root: Path, tables: dict[str, list[dict]]) -> None:
    out = root / VERSION
    out.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        (out / f"{name}.json").write_text(json.dumps(tables[name], indent=0))


def write_maps(root: Path, tables: dict[str, list[dict]], seed: int) -> None:
    """Small binary drivable-area masks (the devkit only checks that the files exist)."""
    for i, rec in enumerate(tables["map"]):
        rng = np.random.default_rng([seed, 7, i])
        yy, xx = np.mgrid[0:256, 0:256]
        mask = (np.abs(np.sin(xx / 37.0 + rng.uniform(0, 6))) > 0.8) | (np.abs(np.cos(yy / 29.0)) > 0.85)
        path = root / rec["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray((mask * 255).astype(np.uint8), mode="L").save(path)


def lidar_points(scene: Scene, k: int, seed: int) -> np.ndarray:
    """(N, 5) float32 x, y, z, intensity, ring in the LIDAR_TOP frame: ground returns plus exactly
    `num_lidar_pts` returns inside each annotated box."""
    rng = np.random.default_rng([seed, scene.index, k, 11])
    frame = scene.frames[k]
    global2lidar = g.rigid_inverse(frame.lidar_pose.matrix @ scene.calibs[LIDAR].matrix)
    r = rng.uniform(3.0, 50.0, 1200)
    phi = rng.uniform(-np.pi, np.pi, 1200)
    ground_global = g.apply(frame.lidar_pose.matrix, np.stack([r * np.cos(phi), r * np.sin(phi), 0 * r], 1))
    parts = [g.apply(global2lidar, ground_global)]
    for a in frame.anns:
        if a.num_lidar_pts == 0:
            continue
        local = rng.uniform(-0.49, 0.49, (a.num_lidar_pts, 3)) * a.size[[1, 0, 2]]
        world = local @ g.quat_to_matrix(a.rotation).T + a.translation
        parts.append(g.apply(global2lidar, world))
    xyz = np.concatenate(parts)
    extra = np.stack([rng.uniform(0, 100, len(xyz)), rng.integers(0, 32, len(xyz))], 1)
    return np.concatenate([xyz, extra], 1).astype(np.float32)


def write_lidar(root: Path, scenes: Iterable[Scene], names: Names) -> None:
    for scene in scenes:
        for k in range(len(scene.frames)):
            path = root / names.filename(scene, k, LIDAR)
            path.parent.mkdir(parents=True, exist_ok=True)
            lidar_points(scene, k, names.seed).tofile(path)
