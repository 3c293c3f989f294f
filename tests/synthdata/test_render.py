"""Camera JPEGs: size, quality and statistics of a photo, and objects drawn where the 2D boxes say."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

CAMERAS = ("CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK", "CAM_BACK_LEFT", "CAM_BACK_RIGHT")
# IJG standard luminance quantisation table (JPEG Annex K).
STD_LUMA = np.array(
    [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
     14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]
)  # fmt: skip
# Distinctly coloured classes (labels2d: car, truck, bus, bicycle, pedestrian, cone) -> base RGB.
COLOURS = {0: (170, 40, 40), 1: (40, 90, 170), 3: (220, 170, 30), 5: (30, 160, 60), 7: (230, 90, 150)}
COLOURS[8] = (250, 110, 0)


def _jpegs(root: Path) -> list[Path]:
    return sorted((root / "samples").glob("CAM_*/*.jpg"))


def test_jpeg_size_quality_and_statistics(synthetic_dataset: Path) -> None:
    files = _jpegs(synthetic_dataset)
    assert len(files) == 12 * 6
    sizes = np.array([f.stat().st_size for f in files]) / 1000.0
    assert sizes.min() >= 150 and sizes.max() <= 300, (sizes.min(), sizes.max())
    for f in files[::9]:
        with Image.open(f) as img:
            assert img.format == "JPEG" and img.size == (1600, 900) and img.mode == "RGB"
            quality = 100.0 - 50.0 * np.sum(img.quantization[0]) / np.sum(STD_LUMA)
            assert 88 <= quality <= 96, quality
            grey = np.asarray(img.convert("L"), dtype=np.float64)
        hist = np.bincount(grey.astype(np.uint8).ravel(), minlength=256) / grey.size
        entropy = -np.sum(hist[hist > 0] * np.log2(hist[hist > 0]))
        assert entropy > 6.0, entropy  # not flat colour
        a, b = grey[:, :-1].ravel(), grey[:, 1:].ravel()
        assert np.corrcoef(a, b)[0, 1] > 0.9  # spatially smooth: not white noise
        assert 1.0 < np.abs(np.diff(grey, axis=1)).mean() < 12.0  # but textured


def test_objects_visible_where_2d_boxes_are(synthetic_dataset: Path) -> None:
    """At an unoccluded projected box centre the pixel has the hue of the object's class."""
    infos = []
    for split in ("train", "val"):
        with open(synthetic_dataset / f"nuscenes2d_temporal_infos_{split}.pkl", "rb") as f:
            infos += pickle.load(f)["infos"]
    checked = hits = 0
    for info in infos:
        for i, cam in enumerate(CAMERAS):
            boxes, centres = info["bboxes2d"][i], info["centers2d"][i]
            labels, depths = info["labels2d"][i], info["depths"][i]
            if not len(labels):
                continue
            img = None
            for j in range(len(labels)):
                u, v = centres[j]
                if labels[j] not in COLOURS or not (4 <= u < 1596 and 4 <= v < 896):
                    continue
                nearer = (depths < depths[j]) & (boxes[:, 0] <= u + 3) & (boxes[:, 2] >= u - 3)
                nearer &= (boxes[:, 1] <= v + 3) & (boxes[:, 3] >= v - 3)
                w, h = boxes[j, 2] - boxes[j, 0], boxes[j, 3] - boxes[j, 1]
                if nearer.any() or min(w, h) < 12:
                    continue
                if img is None:
                    img = np.asarray(Image.open(info["cams"][cam]["data_path"]), dtype=np.float64)
                patch = img[int(v) - 2 : int(v) + 3, int(u) - 2 : int(u) + 3].reshape(-1, 3).mean(0)
                ref = np.array(COLOURS[labels[j]], dtype=np.float64)
                cos = patch @ ref / (np.linalg.norm(patch) * np.linalg.norm(ref))
                checked += 1
                hits += cos > 0.97
    assert checked >= 20
    assert hits / checked >= 0.95, (hits, checked)


@pytest.mark.parametrize("seed", [5])
def test_deterministic_for_a_seed(tmp_path: Path, seed: int) -> None:
    from synthdata import ensure_dataset

    a = ensure_dataset(tmp_path / "a", scenes=1, samples_per_scene=2, seed=seed, jobs=1)
    b = ensure_dataset(tmp_path / "b", scenes=1, samples_per_scene=2, seed=seed, jobs=2)
    c = ensure_dataset(tmp_path / "c", scenes=1, samples_per_scene=2, seed=seed + 1, jobs=1)
    files_a = sorted(
        p.relative_to(a)
        for p in a.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.suffix in {".jpg", ".json", ".bin", ".png"}
    )
    assert len(files_a) == 13 + 2 * 7 + 1  # tables, 2 samples x (6 cameras + lidar), one map
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    jpgs_a = {(a / r).read_bytes() for r in files_a if r.suffix == ".jpg"}
    jpgs_c = {p.read_bytes() for p in c.rglob("*.jpg")}
    assert len(jpgs_c) == 12 and not jpgs_a & jpgs_c
    with open(a / "nuscenes2d_temporal_infos_train.pkl", "rb") as f:
        ia = pickle.load(f)["infos"]
    with open(b / "nuscenes2d_temporal_infos_train.pkl", "rb") as f:
        ib = pickle.load(f)["infos"]
    assert len(ia) == len(ib) == 2
    for x, y in zip(ia, ib, strict=True):
        np.testing.assert_array_equal(x["gt_boxes"], y["gt_boxes"])
        assert x["token"] == y["token"] and x["timestamp"] == y["timestamp"]
