"""``image_path="fast"``: other pixels (bounded against upstream's PIL path), the same targets."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import numpy as np
import pytest
import torch
from dali_streampetr.config.settings import LoaderConfig
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.graph import image_ops
from dali_streampetr.sampling.modes import Streaming
from loader_data import tiny_config
from test_pipeline import STD, upstream_image


def assert_same(a, b, where: str = "batch") -> None:
    """``a`` and ``b`` equal exactly, bit for bit where they are arrays, recursively."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif is_dataclass(a):
        for f in fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif hasattr(a, "__dict__") and not isinstance(a, type):  # e.g. mmdet3d-free box holders
        assert_same(vars(a), vars(b), where)
    else:
        assert a == b, (where, a, b)


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
