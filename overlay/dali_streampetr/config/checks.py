"""Checks of every value the loader reads from the config, each error naming the config key, the
value and what is allowed (run when a :class:`~.settings.LoaderConfig` is made)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

IMAGE_PATHS = ("exact", "fast")  # LoaderConfig.image_path: the resampling of pipeline/graph.py

# LoaderConfig / AugConfig field -> the key a user writes in the StreamPETR config.
KEY_OF = {
    "mean": "img_norm_cfg.mean",
    "std": "img_norm_cfg.std",
    "to_rgb": "img_norm_cfg.to_rgb",
    "size_divisor": "size_divisor",
    "point_cloud_range": "point_cloud_range",
    "class_names": "class_names",
    "samples_per_gpu": "data.samples_per_gpu",
    "seq_split_num": "data.train.seq_split_num",
    **{
        k: f"ida_aug_conf.{k}"
        for k in ("resize_lim", "final_dim", "bot_pct_lim", "rot_lim", "H", "W", "rand_flip")
    },
    **{
        k: f"train_pipeline GlobalRotScaleTransImage.{k}"
        for k in ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle")
    },
    "min_size": "min_size",
}


class ConfigValueError(ValueError):
    """A config value the loader cannot use."""


def key_of(field: str) -> str:
    return KEY_OF.get(field, f"data_loading_config.{field}")


def _fail(field: str, value: Any, allowed: str) -> ConfigValueError:
    return ConfigValueError(f"{key_of(field)} must be {allowed}, got {value!r}")


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def is_bool(value: Any) -> bool:
    return type(value).__name__ in ("bool", "bool_")  # Python or numpy bool, never 0/1/"no"


def check_int(field: str, value: Any, lo: int, hi: int | None = None) -> None:
    if not is_int(value) or value < lo or (hi is not None and value > hi):
        allowed = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise _fail(field, value, allowed)


def check_bool(field: str, value: Any) -> None:
    if not is_bool(value):
        raise _fail(field, value, "True or False")


def check_choice(field: str, value: Any, choices: tuple) -> None:
    if value not in choices or not isinstance(value, str):
        raise _fail(field, value, " or ".join(repr(c) for c in choices))


def check_numbers(
    field: str, value: Any, n: int, ok: Callable[[float], bool] = lambda v: True, what: str = "numbers"
) -> None:
    """``n`` finite numbers (a list/tuple) each passing ``ok``."""
    if (
        not isinstance(value, list | tuple)
        or len(value) != n
        or not all(is_number(v) and ok(v) for v in value)
    ):
        raise _fail(field, value, f"{n} finite {what}")


def check_range(
    field: str, value: Any, ok: Callable[[float], bool] = lambda v: True, what: str = "numbers"
) -> None:
    """A (low, high) pair with low <= high."""
    check_numbers(field, value, 2, ok, what)
    if value[0] > value[1]:
        raise _fail(field, value, f"a (low, high) pair of {what} with low <= high")


def check_aug(aug: Any) -> None:
    """The ``ida_aug_conf`` / GlobalRotScaleTransImage values."""
    check_range("resize_lim", aug.resize_lim, lambda v: v > 0, "positive numbers")
    if not (isinstance(aug.final_dim, list | tuple) and len(aug.final_dim) == 2 and all(
        is_int(v) and v > 0 for v in aug.final_dim
    )):  # fmt: skip
        raise _fail("final_dim", aug.final_dim, "2 positive integers (height, width)")
    check_range("bot_pct_lim", aug.bot_pct_lim, lambda v: 0 <= v < 1, "numbers in [0, 1)")
    check_numbers("rot_lim", aug.rot_lim, 2)
    if tuple(aug.rot_lim) != (0.0, 0.0):
        raise _fail("rot_lim", aug.rot_lim, "(0.0, 0.0) (upstream asserts it)")
    check_int("H", aug.H, 1)
    check_int("W", aug.W, 1)
    check_bool("rand_flip", aug.rand_flip)
    check_range("rot_range", aug.rot_range)
    check_range("scale_ratio_range", aug.scale_ratio_range, lambda v: v > 0, "positive numbers")
    check_numbers("translation_std", aug.translation_std, 3, lambda v: v >= 0, "non-negative numbers")
    check_bool("reverse_angle", aug.reverse_angle)
    if not is_number(aug.min_size) or aug.min_size < 0:
        raise _fail("min_size", aug.min_size, "a number >= 0")
    rows = int((1 - aug.bot_pct_lim[1]) * int(aug.H * aug.resize_lim[0]))
    if rows < aug.final_dim[0]:
        raise ConfigValueError(
            f"ida_aug_conf: the smallest resize (resize_lim[0]={aug.resize_lim[0]} of H={aug.H}, bottom crop "
            f"{aug.bot_pct_lim[1]}) leaves {rows} rows, fewer than final_dim[0]={aug.final_dim[0]}: the crop "
            "would start above the image; raise resize_lim or lower final_dim"
        )


def check_loader(cfg: Any) -> None:
    """Every value of a LoaderConfig (the DALI knobs and what comes from the StreamPETR config)."""
    check_numbers("mean", cfg.mean, 3)
    check_numbers("std", cfg.std, 3, lambda v: v > 0, "positive numbers")
    check_bool("to_rgb", cfg.to_rgb)
    check_int("size_divisor", cfg.size_divisor, 1)
    check_numbers("point_cloud_range", cfg.point_cloud_range, 6)
    pcr = cfg.point_cloud_range
    if not all(pcr[i] < pcr[i + 3] for i in range(3)):
        raise _fail("point_cloud_range", pcr, "(x_min, y_min, z_min, x_max, y_max, z_max) with min < max")
    names = cfg.class_names
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise _fail("class_names", names, "a non-empty list of distinct class names")
    check_int("samples_per_gpu", cfg.samples_per_gpu, 1)
    if cfg.seq_split_num != "all" and (not is_int(cfg.seq_split_num) or cfg.seq_split_num < 1):
        raise _fail("seq_split_num", cfg.seq_split_num, "an integer >= 1 or 'all'")
    check_int("num_threads", cfg.num_threads, 1, 256)
    check_int("py_num_workers", cfg.py_num_workers, 0, 64)
    check_int("prefetch_queue_depth", cfg.prefetch_queue_depth, 1, 64)
    check_choice("device", cfg.device, ("cpu", "gpu"))
    check_choice("image_path", cfg.image_path, IMAGE_PATHS)
    for flag in (
        "roi_decode",
        "replicate_dataset_per_gpu",
        "offset_order_per_rank",
        "log_slots",
        "trusted_pickle",
    ):
        check_bool(flag, getattr(cfg, flag))
    check_choice("on_bad_image", cfg.on_bad_image, ("raise", "skip"))
    for key in ("batch_timeout_s", "start_timeout_s"):
        if not is_number(getattr(cfg, key)) or getattr(cfg, key) <= 0:
            raise _fail(key, getattr(cfg, key), "a number of seconds > 0")
    check_int("max_bad_images", cfg.max_bad_images, 0)
    check_aug(cfg.aug)
