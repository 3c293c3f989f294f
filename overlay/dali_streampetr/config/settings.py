"""The loader's settings: :class:`LoaderConfig` (with :class:`AugConfig`), its defaults, and which
of its fields are ``data_loading_config`` keys. :mod:`.reader` fills it from a StreamPETR config."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .checks import check_aug, check_loader
from .modes import TrainingMode

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
    mode: TrainingMode = field(default_factory=TrainingMode)  # data.train's mode (config/modes.py)
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


IDA_KEYS = ("resize_lim", "final_dim", "bot_pct_lim", "rot_lim", "H", "W", "rand_flip")
"""The :class:`AugConfig` fields of ``ida_aug_conf`` (ResizeCropFlipRotImage's ``data_aug_conf``)."""
GRST_KEYS = ("rot_range", "scale_ratio_range", "translation_std", "reverse_angle")
"""The :class:`AugConfig` fields that are GlobalRotScaleTransImage's parameters."""
