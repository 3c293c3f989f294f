"""The external source's images: their size read from the header of every decoder format, a missing,
cut or undecodable image named by sample, camera and path, ``on_bad_image="skip"`` serving it black,
and PNG cameras read like upstream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.pipeline_errors import BadImageError
from dali_streampetr.pipeline.source import jpeg_size
from float_tolerance import float_atol
from image_reference import MEAN, STD, upstream_image
from loader_data import tiny_config
from PIL import Image


def test_jpeg_size_and_damage(tiny_root):
    data = next((tiny_root / "samples" / "CAM_BACK").iterdir()).read_bytes()
    assert jpeg_size(data) == (225, 400)
    for bad, msg in ((data[: len(data) // 2], "truncated"), (b"GIF89a" + data, "not a JPEG")):
        with pytest.raises(ValueError, match=msg):
            jpeg_size(bad)


def test_missing_or_corrupt_image_names_sample_camera_path(damaged_root):
    with build_loader(tiny_config(), damaged_root) as loader:
        frame = loader.frames[loader.planner.plan(0)[0].index]
    path = frame.img_paths[2]
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 3])
    for workers in (0, 1):
        with (
            build_loader(tiny_config(py_num_workers=workers), damaged_root) as loader,
            pytest.raises(BadImageError) as err,
        ):
            next(loader)
        assert (
            frame.token in str(err.value) and frame.cam_names[2] in str(err.value) and path in str(err.value)
        )
    Path(path).write_bytes(
        data[: data.index(b"\xff\xda")] + b"\xff\xd9"
    )  # header fine, no scan: decoder fails
    with build_loader(tiny_config(), damaged_root) as loader, pytest.raises(BadImageError, match=frame.token):
        next(loader)


def test_skip_mode_counts_and_blackens(damaged_root):
    with build_loader(tiny_config(), damaged_root) as loader:
        frame = loader.frames[loader.planner.plan(0)[0].index]
    (damaged_root / frame.img_paths[4]).unlink()
    with build_loader(tiny_config(on_bad_image="skip"), damaged_root) as loader:
        batch = next(loader)
    assert batch["dali"][0]["bad_cameras"] == [frame.cam_names[4]] and loader.bad_images == 1
    img = batch["img"][0, 0, 4].numpy()
    black = np.broadcast_to((-MEAN / STD)[:, None, None], (3, 64, 176))
    # float32 normalisation of 0: mean and 1/std rounded, a difference and a product, on terms <= 2.2
    np.testing.assert_allclose(img[:, :, :176], black, rtol=0, atol=float_atol(np.float32, 2.2, 5))


def test_image_size_reads_every_decoder_format_from_its_header(tiny_root, tmp_path):
    import io

    from dali_streampetr.pipeline.source import image_size

    img = Image.open(next((tiny_root / "samples" / "CAM_BACK").iterdir())).crop((0, 0, 300, 200))
    for fmt in ("PNG", "BMP", "TIFF", "WEBP", "PPM"):
        buf = io.BytesIO()
        img.save(buf, format=fmt)
        assert image_size(buf.getvalue()) == (200, 300), fmt
    png = io.BytesIO()
    img.save(png, format="PNG")
    with pytest.raises(ValueError, match="truncated PNG"):
        image_size(png.getvalue()[:-40])
    gif = io.BytesIO()
    img.save(gif, format="GIF")
    with pytest.raises(ValueError, match="GIF is not a format the DALI decoder reads"):
        image_size(gif.getvalue())
    with pytest.raises(ValueError, match="not an image format"):
        image_size(b"plain text, not an image at all")


def test_png_cameras_are_read_like_upstream(damaged_root):
    """Upstream reads images with mmcv.imread, so PNG works there: here too, with the same pixels."""
    import pickle

    ann = damaged_root / "nuscenes2d_temporal_infos_train.pkl"
    data = pickle.loads(ann.read_bytes())
    for info in data["infos"]:
        cam = info["cams"]["CAM_BACK"]
        jpg = damaged_root / cam["data_path"].removeprefix("./data/nuscenes/")
        Image.open(jpg).save(jpg.with_suffix(".png"))
        jpg.unlink()
        cam["data_path"] = cam["data_path"].replace(".jpg", ".png")
    ann.write_bytes(pickle.dumps(data))
    with build_loader(tiny_config(), damaged_root, seed=4) as loader:
        for _ in range(2):
            batch = next(loader)
            for b, info in enumerate(batch["dali"]):
                path = loader.frames[info["index"]].img_paths[3]
                assert path.endswith(".png") and not batch["dali"][b]["bad_cameras"]
                ref = upstream_image(path, info["draw"])
                diff = np.abs(batch["img"][b, 0, 3].numpy() - ref) * STD[:, None, None]
                # empirical: the image tolerance of docs/tolerances.md (another resize filter)
                assert diff.mean() <= 0.5 and np.percentile(diff, 99.9) <= 4, (info, diff.mean())
