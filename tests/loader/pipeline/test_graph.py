"""The DALI graph's image ops: the ROI decode equals the full decode, the pixels agree with upstream's PIL
path; ``image_path="fast"``: other pixels (bounded against upstream's PIL path), the same targets."""

from __future__ import annotations

import numpy as np
import pytest
from bit_for_bit import assert_same
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.graph import image_ops
from dali_streampetr.sampling.modes import Streaming
from dali_streampetr.settings import LoaderConfig
from float_tolerance import float_atol
from image_reference import STD, upstream_image
from loader_data import tiny_config


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


def test_fast_path_changes_pixels_never_targets(tiny_root):
    grey = []  # (fast - exact, fast - upstream's PIL) per image, grey levels
    with (
        build_loader(tiny_config(), tiny_root, seed=4) as exact,
        build_loader(tiny_config(image_path="fast"), tiny_root, seed=4) as fast,
    ):
        for _ in range(4):
            a, b = next(exact), next(fast)
            assert a.keys() == b.keys()
            for key in a.keys() - {"img"}:
                assert_same(a[key], b[key], key)
            assert a["img"].dtype == b["img"].dtype and a["img"].shape == b["img"].shape
            for s, info in enumerate(b["dali"]):
                for cam in (0, 3):
                    got = b["img"][s, 0, cam].numpy()
                    ref = upstream_image(fast.frames[info["index"]].img_paths[cam], info["draw"])
                    grey.append(
                        (
                            np.abs(got - a["img"][s, 0, cam].numpy()) * STD[:, None, None],
                            np.abs(got - ref) * STD[:, None, None],
                        )
                    )
    to_exact = np.stack([d for d, _ in grey])
    assert to_exact.max() >= 1.0  # the setting reached the graph: another filter, other pixels
    for _, to_pil in grey:
        # empirical on these small sharp-edged drawings (4 batches x 6 cameras): mean 0.51-0.85,
        # 99.9th percentile <= 12.1 grey levels (cubic: <= 0.15 / 5.0); the window shifted by one
        # resized pixel gives mean 3.4-3.9 / 80-88, a wrong flip 5-20 / 108-145
        assert to_pil.mean() <= 1.0 and np.percentile(to_pil, 99.9) <= 16, (
            to_pil.mean(),
            np.percentile(to_pil, 99.9),
        )


def test_fast_padding_is_the_separate_pad():
    """The fast path's black padding by crop_mirror_normalize is bit-identical to ``fn.pad`` first,
    flipped or not, with the crop smaller than ``final_dim`` in either axis."""
    from nvidia.dali import fn, pipeline_def, types

    cfg, final = LoaderConfig(mode=Streaming()), (24, 40)
    rng = np.random.default_rng(0)
    images = [
        rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((24, 31), (17, 40), (9, 13), (24, 40))
    ]
    flips = [np.array(f, dtype=np.int32) for f in (1, 0, 1, 1)]
    _, pad_in_normalise = image_ops("fast", cfg.mean, cfg.std, final)
    assert pad_in_normalise  # the fast path folds the pad (else this test compares nothing)

    @pipeline_def(batch_size=len(images), num_threads=1, device_id=None)
    def graph():
        img, flip = fn.external_source(
            source=lambda: (images, flips), num_outputs=2, batch=True, layout=["HWC", ""]
        )
        norm = {"mirror": flip, "mean": list(cfg.mean), "std": list(cfg.std), "output_layout": "CHW"}
        norm["dtype"] = types.FLOAT
        padded = fn.crop_mirror_normalize(fn.pad(img, axis_names="HW", shape=list(final)), **norm)
        return padded, fn.crop_mirror_normalize(img, **norm, **pad_in_normalise)

    pipe = graph()
    pipe.build()
    separate, folded = (np.array(o.as_tensor()) for o in pipe.run())
    assert separate.shape == folded.shape == (len(images), 3, *final)
    np.testing.assert_array_equal(folded, separate)


@pytest.mark.parametrize("value", ["faster", "Fast", "", None, 1])
def test_image_path_outside_the_set_is_refused_by_name(value):
    with pytest.raises(ValueError, match=r"image_path.*'exact' or 'fast'"):
        LoaderConfig(image_path=value, mode=Streaming())
    with pytest.raises(ValueError, match=r"image_path .*'exact' or 'fast'"):
        image_ops(value, (0.0,) * 3, (1.0,) * 3, (8, 8))
