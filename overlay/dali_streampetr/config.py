"""Loader settings read from a StreamPETR config (plain dict or mmcv ``Config``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .pipeline_check import COLLECT3D_KEYS, META_KEYS, check_pipeline
from .training_mode import COLLECT_KEYS, TrainingMode, dataset_values, refuse, training_mode_from
from .validate import ConfigValueError, check_aug, check_loader

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
_DEFAULT_ROT_RANGE = (-0.3925, 0.3925)
_DEFAULT_SCALE_RANGE = (0.95, 1.05)


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
    rot_range: tuple[float, float] = _DEFAULT_ROT_RANGE
    scale_ratio_range: tuple[float, float] = _DEFAULT_SCALE_RANGE
    translation_std: tuple[float, float, float] = (0.0, 0.0, 0.0)
    reverse_angle: bool = True
    min_size: float = 2.0

    def __post_init__(self) -> None:
        check_aug(self)


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
    mode: TrainingMode = field(default_factory=TrainingMode)  # data.train's mode (training_mode.py)
    # DALI-only knobs (``data_loading_config``)
    num_threads: int = 2
    py_num_workers: int = 1
    prefetch_queue_depth: int = 2
    device: str = "cpu"
    roi_decode: bool = True
    replicate_dataset_per_gpu: bool = False
    offset_order_per_rank: bool = False
    on_bad_image: str = "raise"
    max_bad_images: int = 10  # skip: more distinct bad files than this stop the run
    batch_timeout_s: float = 30.0  # a dead worker is noticed at once; this bounds a stalled pipeline
    start_timeout_s: float = 300.0  # bounds the pipeline build and the python workers' start-up
    trusted_pickle: bool = False  # True: plain pickle.load of the info file (it can run code)
    log_slots: bool = False  # training only: each rank logs the (scene, frame) of every batch slot

    def __post_init__(self) -> None:
        check_loader(self)


DALI_KNOBS = (
    "num_threads",
    "py_num_workers",
    "prefetch_queue_depth",
    "device",
    "roi_decode",
    "replicate_dataset_per_gpu",
    "offset_order_per_rank",
    "on_bad_image",
    "max_bad_images",
    "batch_timeout_s",
    "start_timeout_s",
    "trusted_pickle",
    "log_slots",
)


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if isinstance(cfg, Mapping) or hasattr(cfg, "get"):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


def _seq(value: Any) -> Any:
    """Lists become tuples (the config is frozen); anything else is kept for the checks to name."""
    return tuple(value) if isinstance(value, list | tuple) else value


def _find_transform(pipeline: Any, name: str) -> Mapping:
    for step in pipeline or ():
        if _get(step, "type") == name:
            return step
    return {}


IDA_KEYS = ("resize_lim", "final_dim", "bot_pct_lim", "rot_lim", "H", "W", "rand_flip")
GRST_KEYS = ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle")


def _pipeline_expected(cfg: LoaderConfig) -> dict[str, Any]:
    """The value the loader uses for every pipeline parameter it reads (:data:`.pipeline_check.READ`)."""
    aug = cfg.aug
    return {
        "point_cloud_range": cfg.point_cloud_range,
        "classes": cfg.class_names,
        "class_names": cfg.class_names,
        "data_aug_conf": {k: getattr(aug, k) for k in IDA_KEYS},
        **{k: getattr(aug, k) for k in GRST_KEYS},
        "mean": cfg.mean,
        "std": cfg.std,
        "to_rgb": cfg.to_rgb,
        "size_divisor": cfg.size_divisor,
        "collect_keys": (*COLLECT_KEYS, "prev_exists"),
        "keys": COLLECT3D_KEYS,
        "meta_keys": META_KEYS,
    }


def loader_config_from(cfg: Any, **overrides: Any) -> LoaderConfig:
    """Read ``ida_aug_conf``, ``img_norm_cfg``, ``point_cloud_range``, ``class_names``,
    ``data.samples_per_gpu``, the dataset keys of ``data.train`` (the training mode:
    :mod:`.training_mode`), its pipeline (``data.train.pipeline``, else ``train_pipeline``: every step
    checked, :mod:`.pipeline_check`) and the ``data_loading_config`` block; ``overrides`` win over
    all of them. Raises :class:`~.validate.ConfigValueError` (or its subclass
    :class:`~.training_mode.UnsupportedConfigError`) naming the first key the loader cannot use."""
    data = _get(cfg, "data", {}) or {}
    train = _get(data, "train", {}) or {}
    ida = dict(_get(cfg, "ida_aug_conf", {}) or {})
    pipeline = _get(train, "pipeline") or _get(cfg, "train_pipeline")
    grst = _find_transform(pipeline, "GlobalRotScaleTransImage")
    aug_kwargs: dict[str, Any] = {k: ida[k] for k in ("H", "W", "rand_flip") if k in ida}
    for key in ("resize_lim", "final_dim", "bot_pct_lim", "rot_lim"):
        if key in ida:
            aug_kwargs[key] = _seq(ida[key])
    if grst:
        aug_kwargs["reverse_angle"] = False  # upstream's default, when the step does not set it
    for key in ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle"):
        if _get(grst, key) is not None:
            aug_kwargs[key] = _seq(_get(grst, key))
    norm = _get(cfg, "img_norm_cfg", {}) or {}
    kwargs: dict[str, Any] = {"aug": AugConfig(**aug_kwargs)}
    for key in ("mean", "std", "to_rgb"):
        if _get(norm, key) is not None:
            kwargs[key] = _seq(_get(norm, key))
    if _get(cfg, "point_cloud_range") is not None:
        kwargs["point_cloud_range"] = _seq(_get(cfg, "point_cloud_range"))
    names = _get(cfg, "class_names") or _get(train, "classes")
    if names:
        kwargs["class_names"] = _seq(names)
    pad = _find_transform(pipeline, "PadMultiViewImage")
    if _get(pad, "size_divisor") is not None:
        kwargs["size_divisor"] = _get(pad, "size_divisor")
    if _get(data, "samples_per_gpu") is not None:
        kwargs["samples_per_gpu"] = _get(data, "samples_per_gpu")
    kwargs["seq_split_num"] = dataset_values(train)["seq_split_num"]
    if _get(train, "ann_file"):
        kwargs["ann_file"] = str(_get(train, "ann_file"))
    dlc = _get(cfg, "data_loading_config", {}) or {}
    unknown = set(dlc) - set(DALI_KNOBS)
    if unknown:
        raise ConfigValueError(
            f"unknown data_loading_config keys: {sorted(unknown)} (known: {list(DALI_KNOBS)})"
        )
    kwargs.update({k: dlc[k] for k in DALI_KNOBS if k in dlc})
    known = {f.name for f in fields(LoaderConfig)}
    bad = set(overrides) - known
    if bad:
        raise TypeError(f"unknown loader settings: {sorted(bad)}")
    kwargs.update(overrides)
    result = LoaderConfig(**kwargs)  # checks every value (validate.py)
    if "mode" not in overrides:
        result = replace(result, mode=training_mode_from(cfg, result.class_names))
    if pipeline is not None:
        check_pipeline(pipeline, _pipeline_expected(result))
    if result.mode.epoch_based and result.offset_order_per_rank:
        raise refuse("data_loading_config.offset_order_per_rank", True, "False with seq_mode=False",
                     "upstream's DistributedGroupSampler takes no per-rank seed offset")  # fmt: skip
    return result
