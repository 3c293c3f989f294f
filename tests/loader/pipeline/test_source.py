"""The DALI image path: ROI decode, agreement with upstream's PIL path, bad images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.source import BadImageError, jpeg_size
from float_tolerance import float_atol
from loader_data import tiny_config
from PIL import Image

MEAN = np.array([123.675, 116.28, 103.53])
STD = np.array([58.395, 57.12, 57.375])


def upstream_image(path: str, draw, final=(64, 176)) -> np.ndarray:
    """ResizeCropFlipRotImage + NormalizeMultiviewImage(to_rgb) + PadMultiViewImage(32) with PIL: an
    independent oracle of upstream's image path, sharing no code with the DALI graph."""
    img = Image.open(path).convert("RGB").resize(draw.resize_dims).crop(draw.crop)
    if draw.flip:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    out = (np.asarray(img, dtype=np.float64) - MEAN) / STD
    pad_w = -final[1] % 32
    return np.pad(out, ((0, -final[0] % 32), (0, pad_w), (0, 0))).transpose(2, 0, 1)


def test_roi_decode_equals_full_decode(tiny_root):
    from nvidia.dali import fn, pipeline_def

    path = next((tiny_root / "samples" / "CAM_FRONT").iterdir())
    data = np.fromfile(path, dtype=np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def graph():
        jpeg = fn.external_source(source=lambda: [data], batch=True)
        return fn.decoders.image(jpeg), fn.decoders.image_slice(
            jpeg, start=[77, 0], shape=[148, 400], axis_names="HW"
        )

    pipe = graph()
    pipe.build()
    full, roi = (np.array(o.as_tensor())[0] for o in pipe.run())
    np.testing.assert_array_equal(roi, full[77:])
    with (
        build_loader(tiny_config(roi_decode=True), tiny_root) as a,
        build_loader(tiny_config(roi_decode=False), tiny_root) as b,
    ):
        for _ in range(2):
            diff = (
                np.abs(next(a)["img"].numpy() - next(b)["img"].numpy()) * STD[None, None, None, :, None, None]
            )
            # the resampling window only moves by whole decoded rows: at most a rounding flip (one grey
            # level) in a few pixels (empirical: under 1 in 10**4, docs/tolerances.md); beyond that only
            # float32 normalisation noise: mean and 1/std rounded, a difference, a product (4) per
            # side on terms |x| + |mean| <= 380 grey levels
            noise = float_atol(np.float32, 380, 2 * 4)
            assert diff.max() <= 1.0 + noise and np.mean(diff > noise) < 1e-4


def test_images_match_upstream_pil_path(tiny_root):
    seen = set()
    with build_loader(tiny_config(), tiny_root, seed=4) as loader:
        for _ in range(4):
            batch = next(loader)
            for b, info in enumerate(batch["dali"]):
                d = info["draw"]
                seen.add((d.flip, d.resize_dims[0] < 176))
                for cam in (0, 3):
                    ref = upstream_image(loader.frames[info["index"]].img_paths[cam], d)
                    got = batch["img"][b, 0, cam].numpy()
                    assert got.shape == ref.shape == (3, 64, 192)
                    diff = np.abs(got - ref) * STD[:, None, None]  # grey levels
                    # empirical: the image tolerance of docs/tolerances.md (another resize filter)
                    assert diff.mean() <= 0.5 and np.percentile(diff, 99.9) <= 4, (info, cam, diff.mean())
    assert {f for f, _ in seen} == {False, True} and {p for _, p in seen} == {False, True}, seen


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
