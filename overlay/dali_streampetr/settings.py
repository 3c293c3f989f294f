"""The loader's settings and what values they may take, at the ground of the package:
:class:`LoaderConfig` (filled by :mod:`.config.reader`), the checks of every value when one is made
(:class:`ConfigValueError` naming the config key), the refusal of what upstream accepts but the
loader does not reproduce (:func:`refuse`), and the names of the modes and of upstream's parts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

STREAMING, SINGLE_FRAME, SLIDING_WINDOW = "streaming", "single_frame", "sliding_window"
TEST = "test"  # the test / validation loader (data.test, data.val): upstream's test_mode dataset
TEST_SAMPLER = "DistributedSampler"  # the plugin's, with shuffle=False (configs' nonshuffler_sampler)
DATASET_TYPE = "CustomNuScenesDataset"
STREAM_SAMPLER = "InfiniteGroupEachSampleInBatchSampler"
GROUP_SAMPLER = "DistributedGroupSampler"
ITER_RUNNER, EPOCH_RUNNER = "IterBasedRunner", "EpochBasedRunner"

IMAGE_PATHS = ("exact", "fast")  # LoaderConfig.image_path: the resampling of pipeline/graph.py

IDA_KEYS = ("resize_lim", "final_dim", "bot_pct_lim", "rot_lim", "H", "W", "rand_flip")
"""The :class:`AugConfig` fields of ``ida_aug_conf`` (ResizeCropFlipRotImage's ``data_aug_conf``)."""
GRST_KEYS = ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle")
"""The :class:`AugConfig` fields that are GlobalRotScaleTransImage's parameters."""

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
    **{k: f"ida_aug_conf.{k}" for k in IDA_KEYS},
    **{k: f"train_pipeline GlobalRotScaleTransImage.{k}" for k in GRST_KEYS},
    "min_size": "min_size",
}


class ConfigValueError(ValueError):
    """A config value the loader cannot use."""


def config_get(cfg: Any, key: str, default: Any = None) -> Any:
    """``cfg[key]`` of a dict or mmcv ``Config`` (anything with ``get``), else its attribute."""
    return cfg.get(key, default) if hasattr(cfg, "get") else getattr(cfg, key, default)


def _fail(field: str, value: Any, allowed: str) -> ConfigValueError:
    return ConfigValueError(
        f"{KEY_OF.get(field, f'data_loading_config.{field}')} must be {allowed}, got {value!r}"
    )


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


class UnsupportedConfigError(ConfigValueError):
    """A config value upstream accepts but the DALI loader does not reproduce exactly."""


def uses_dali(cfg: Any, split: str) -> bool:
    """Whether ``split`` of a StreamPETR config (dict or mmcv ``Config``) reads through the DALI
    loader, the one rule every caller asks (``tools/train.py``, ``tools/test.py``, ``--validate``):
    ``train``, ``use_dali_pipeline``; ``val`` and ``test``, ``use_dali_test_pipeline``, by default
    ``use_dali_pipeline``. Both default to False: upstream's DataLoader."""
    if split not in ("train", "val", "test"):
        raise ValueError(f"split={split!r}: 'train', 'val' or 'test'")
    train = bool(config_get(cfg, "use_dali_pipeline", False))
    return train if split == "train" else bool(config_get(cfg, "use_dali_test_pipeline", train))


WAY_OUT = {
    "train": "Set use_dali_pipeline=False to train on upstream's DataLoader instead",
    "evaluate": "Set use_dali_test_pipeline=False to evaluate on upstream's DataLoader instead",
}


def refuse(
    key: str, value: Any, supported: str, why: str = "", *, action: str = "train"
) -> UnsupportedConfigError:
    """The error for one key: its value, what the loader supports, and why (optional); ``action``:
    ``train`` or ``evaluate``, which switch gives the DataLoader back."""
    reason = f" ({why})" if why else ""
    return UnsupportedConfigError(
        f"{key}={value!r} is not reproduced by the DALI loader{reason}; supported: {supported}. "
        + WAY_OUT[action]
    )


class SamplingMode(Protocol):
    """What the loader asks of a split's sampling mode, which owns the split's sampler, the frames of
    a sample, the draw of a frame and its targets (:mod:`.sampling.modes`: ``Streaming``, ``Queues``,
    ``EvalPass``)."""

    name: str  # the resume state's training_mode: streaming, single_frame, sliding_window, test
    queue_length: int  # frames per sample (the batch's T axis)
    epoch_based: bool  # a pass ends with StopIteration after len(loader) batches
    needs_process_group: bool  # upstream's sampler of the mode is the distributed one
    close_after_pass: bool  # the pipeline and its workers are closed at the end of a pass

    def planner(self, cfg: LoaderConfig, frames: Any, *, rank: int, world_size: int, seed: int) -> Any:
        """This rank's batch planner (its sampler and the per-frame facts the mode needs)."""

    def sample_frames(self, planner: Any, index: int, key: Any) -> Any:
        """The frames of the sample at dataset ``index`` (slot ``key``): a ``QueueChoice``."""

    def draw(self, aug: AugConfig, key: Any, t: int) -> Any:
        """The augmentation draw of frame ``t`` of the sample in slot ``key`` (an ``AugDraw``)."""

    targets: Callable[..., dict]  # a frame's targets: (frame, draw, settings) -> the batch's entries


NUSCENES_CLASSES = (
    "car",
    "truck",
    "construction_vehicle",
    "bus",
    "trailer",
    "barrier",
    "motorcycle",
    "bicycle",
    "pedestrian",
    "traffic_cone",
)


@dataclass(frozen=True)
class AugConfig:
    """The augmentation parameters of ResizeCropFlipRotImage + GlobalRotScaleTransImage."""

    resize_lim: tuple[float, float] = (0.38, 0.55)
    final_dim: tuple[int, int] = (256, 704)
    bot_pct_lim: tuple[float, float] = (0.0, 0.0)
    rot_lim: tuple[float, float] = (0.0, 0.0)
    H: int = 900
    W: int = 1600
    rand_flip: bool = True
    rot_range: tuple[float, float] = (-0.3925, 0.3925)
    scale_ratio_range: tuple[float, float] = (0.95, 1.05)
    translation_std: tuple[float, float, float] = (0.0, 0.0, 0.0)
    reverse_angle: bool = True
    min_size: float = 2.0

    def __post_init__(self) -> None:
        check_aug(self)


KNOB = "data_loading_config"  # field metadata: the field is a key of the config's data_loading_config


def knob(default: Any) -> Any:
    """A :class:`LoaderConfig` field that is a ``data_loading_config`` key, with its default."""
    return field(default=default, metadata={KNOB: True})


@dataclass(frozen=True)
class LoaderConfig:
    """Everything the DALI loader needs; the first block comes from the StreamPETR config."""

    aug: AugConfig = field(default_factory=AugConfig)
    mean: tuple[float, float, float] = (123.675, 116.28, 103.53)
    std: tuple[float, float, float] = (58.395, 57.12, 57.375)
    to_rgb: bool = True
    size_divisor: int = 32
    point_cloud_range: tuple[float, ...] = (-51.2, -51.2, -5.0, 51.2, 51.2, 3.0)
    class_names: tuple[str, ...] = NUSCENES_CLASSES
    samples_per_gpu: int = 2
    seq_split_num: int | str = 2
    ann_file: str = "nuscenes2d_temporal_infos_train.pkl"
    data_root: str = "."  # where the split's images are found (data.<split>.data_root)
    mode: SamplingMode = field(kw_only=True)  # the split's sampling (config/reader.py: sampling/modes.py)
    # The ``data_loading_config`` keys (DALI_KNOBS), each with its default; docs/loader.md lists them.
    num_threads: int = knob(2)
    py_num_workers: int = knob(1)
    prefetch_queue_depth: int = knob(2)
    device: str = knob("cpu")
    roi_decode: bool = knob(True)
    image_path: str = knob("exact")  # "fast": cheaper resampling; other pixels, the same targets
    replicate_dataset_per_gpu: bool = knob(False)
    offset_order_per_rank: bool = knob(False)
    on_bad_image: str = knob("raise")
    max_bad_images: int = knob(10)  # skip: more distinct bad files than this stop the run
    batch_timeout_s: float = knob(30.0)  # a dead worker is noticed at once; this bounds a stalled pipeline
    start_timeout_s: float = knob(300.0)  # bounds the pipeline build and the python workers' start-up
    trusted_pickle: bool = knob(False)  # True: plain pickle.load of the info file (it can run code)
    log_slots: bool = knob(False)  # training only: each rank logs the (scene, frame) of every batch slot

    def __post_init__(self) -> None:
        check_loader(self)


DALI_KNOBS = tuple(f.name for f in fields(LoaderConfig) if f.metadata.get(KNOB))
"""The ``data_loading_config`` keys: the fields of :class:`LoaderConfig` made with :func:`knob`."""
