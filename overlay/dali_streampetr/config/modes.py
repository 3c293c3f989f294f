"""Which of upstream's training modes a config selects, and a refusal, by key, of every dataset,
sampler and runner value the loader does not reproduce.

Upstream (``CustomNuScenesDataset`` + the plugin's ``build_dataloader``) has three modes:

- ``streaming``: ``seq_mode=True`` (which forces ``queue_length=1``, ``random_length=0``,
  ``num_frame_losses=1``), ``InfiniteGroupEachSampleInBatchSampler`` under ``IterBasedRunner``;
- ``single_frame`` (PETRv1): ``seq_mode=False``, ``queue_length=1``, ``DistributedGroupSampler``;
- ``sliding_window`` (the 8-key config): ``seq_mode=False``, ``queue_length > 1``,
  ``DistributedGroupSampler``.

A config whose ``data.train`` names its ``type`` (every upstream config) is read as upstream's
dataset reads it: an absent key has the dataset's default (``seq_mode=False``, ``queue_length=8``,
``filter_empty_gt=True``, ``use_valid_flag=False`` ...). A bare dict without ``data.train.type``
(the loader used on its own) has the loader's streaming defaults for absent keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..batch_schema import STACKED_KEYS
from .checks import ConfigValueError, is_bool, is_int

STREAMING, SINGLE_FRAME, SLIDING_WINDOW = "streaming", "single_frame", "sliding_window"
TEST = "test"  # the test / validation loader (data.test, data.val): upstream's test_mode dataset
TEST_SPLITS = ("test", "val")
TEST_SAMPLER = "DistributedSampler"  # the plugin's, with shuffle=False (configs' nonshuffler_sampler)
DATASET_TYPE = "CustomNuScenesDataset"
STREAM_SAMPLER = "InfiniteGroupEachSampleInBatchSampler"
GROUP_SAMPLER = "DistributedGroupSampler"
ITER_RUNNER, EPOCH_RUNNER = "IterBasedRunner", "EpochBasedRunner"
# the dataset's collect_keys: the keys union2one stacks over the queue, and img_metas
DATASET_COLLECT_KEYS = frozenset({*STACKED_KEYS, "img_metas"})

# CustomNuScenesDataset / NuScenesDataset / Custom3DDataset defaults (the pins).
UPSTREAM_DEFAULTS: dict[str, Any] = {
    "seq_mode": False,
    "seq_split_num": 1,
    "num_frame_losses": 1,
    "queue_length": 8,
    "random_length": 0,
    "filter_empty_gt": True,
    "test_mode": False,
    "use_valid_flag": False,
    "load_interval": 1,
    "with_velocity": True,
    "box_type_3d": "LiDAR",
    "modality": None,
    "file_client_args": {"backend": "disk"},
}
# What the loader takes for an absent key of a bare dict (no data.train.type).
LOADER_DEFAULTS: dict[str, Any] = {
    **UPSTREAM_DEFAULTS,
    "seq_mode": True,
    "seq_split_num": 2,
    "filter_empty_gt": False,
    "use_valid_flag": True,
    "modality": {"use_camera": True},
}
# data.train keys the loader reads or reproduces; any other key is refused.
KNOWN_DATASET_KEYS = frozenset(
    {
        "type",
        "data_root",
        "ann_file",
        "pipeline",
        "classes",
        "collect_keys",
        "eval_version",
        *UPSTREAM_DEFAULTS,
    }
)


class UnsupportedConfigError(ConfigValueError):
    """A config value upstream accepts but the DALI loader does not reproduce exactly."""


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


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if isinstance(cfg, Mapping) or hasattr(cfg, "get"):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


@dataclass(frozen=True)
class TrainingMode:
    """The training mode and the dataset values it depends on (after ``seq_mode``'s overrides), or
    the test mode (``TEST``: one frame per sample, upstream's test sampler)."""

    name: str = STREAMING
    queue_length: int = 1  # frames per sample (the T axis)
    random_length: int = 0
    num_frame_losses: int = 1
    filter_empty_gt: bool = False
    runner: str = ITER_RUNNER

    @property
    def epoch_based(self) -> bool:
        """Whether the loader ends a pass after ``len(loader)`` batches: upstream's epoch-based
        DistributedGroupSampler, or the test sampler (one pass over this rank's chunk)."""
        return self.name != STREAMING


def dataset_values(train: Any) -> dict[str, Any]:
    """The dataset keys of ``data.train`` with upstream's defaults (or the loader's, for a bare dict)."""
    defaults = UPSTREAM_DEFAULTS if _get(train, "type") is not None else LOADER_DEFAULTS
    return {k: _get(train, k, d) if _get(train, k) is not None else d for k, d in defaults.items()}


def _check_dataset(
    train: Any, values: dict[str, Any], class_names: tuple[str, ...], split: str = "train"
) -> None:
    """The dataset keys of ``data.<split>`` (``train``, or a test split: ``test``, ``val``)."""
    action = "train" if split == "train" else "evaluate"
    kind = _get(train, "type")
    if kind is not None and kind != DATASET_TYPE:
        raise refuse(
            f"data.{split}.type",
            kind,
            repr(DATASET_TYPE),
            "the loader reproduces StreamPETR's dataset",
            action=action,
        )
    known = KNOWN_DATASET_KEYS if split == "train" else KNOWN_DATASET_KEYS | {"samples_per_gpu"}
    unknown = sorted(set(train or {}) - known)
    if unknown:
        key = unknown[0]
        raise refuse(
            f"data.{split}.{key}",
            _get(train, key),
            f"the keys {sorted(known)}",
            "an unknown dataset key",
            action=action,
        )
    if split == "train":
        fixed = {"test_mode": False, "use_valid_flag": True}
    else:  # tools/test.py and the evaluation hook set test_mode=True; annotations are not read
        fixed = {"test_mode": True} if _get(train, "test_mode") is not None else {}
    fixed.update({"load_interval": 1, "with_velocity": True, "box_type_3d": "LiDAR"})
    for key, want in fixed.items():
        if values[key] != want or type(values[key]) is not type(want):
            raise refuse(f"data.{split}.{key}", values[key], repr(want), action=action)
    fca = dict(values["file_client_args"] or {})
    if fca != {"backend": "disk"}:
        raise refuse(
            f"data.{split}.file_client_args",
            fca,
            "{'backend': 'disk'}",
            "the loader reads local files",
            action=action,
        )
    modality = values["modality"] or {}
    if not _get(modality, "use_camera", False):
        raise refuse(
            f"data.{split}.modality",
            dict(modality),
            "use_camera=True",
            "the loader reads the cameras",
            action=action,
        )
    classes = _get(train, "classes")
    if classes is not None and tuple(classes) != tuple(class_names):
        raise refuse(
            f"data.{split}.classes",
            list(classes),
            f"the config's class_names {list(class_names)}",
            action=action,
        )
    if split != "train":
        return  # a test sample is one frame: the dataset's collect_keys (union2one) are not used
    keys = _get(train, "collect_keys")
    if keys is not None and (len(set(keys)) != len(keys) or set(keys) != DATASET_COLLECT_KEYS):
        raise refuse(
            "data.train.collect_keys", list(keys), f"the keys {sorted(DATASET_COLLECT_KEYS)}", action=action
        )


def _check_int(key: str, value: Any, lo: int) -> None:
    if not is_int(value) or value < lo:
        raise ConfigValueError(f"{key} must be an integer >= {lo}, got {value!r}")


def training_mode_from(cfg: Any, class_names: tuple[str, ...]) -> TrainingMode:
    """The mode ``cfg`` selects; :class:`UnsupportedConfigError` names the first value the loader
    does not reproduce (the key, the value and what is supported)."""
    data = _get(cfg, "data", {}) or {}
    train = _get(data, "train", {}) or {}
    values = dataset_values(train)
    _check_dataset(train, values, class_names)
    if _get(data, "imgs_per_gpu") is not None:
        raise refuse(
            "data.imgs_per_gpu",
            _get(data, "imgs_per_gpu"),
            "data.samples_per_gpu",
            "upstream's deprecated alias that overrides samples_per_gpu",
        )
    if not is_bool(values["seq_mode"]):
        raise refuse("data.train.seq_mode", values["seq_mode"], "True or False")
    if not is_bool(values["filter_empty_gt"]):
        raise refuse("data.train.filter_empty_gt", values["filter_empty_gt"], "True or False")
    for key in ("queue_length", "num_frame_losses"):
        _check_int(f"data.train.{key}", values[key], 1)
    _check_int("data.train.random_length", values["random_length"], 0)
    runner = _get(_get(cfg, "runner", {}) or {}, "type", ITER_RUNNER if values["seq_mode"] else EPOCH_RUNNER)
    sampler_cfg = _get(data, "shuffler_sampler")
    sampler = _get(sampler_cfg, "type", GROUP_SAMPLER) if sampler_cfg is not None else None
    if values["seq_mode"]:
        if values["filter_empty_gt"]:
            raise refuse(
                "data.train.filter_empty_gt",
                True,
                "False with seq_mode=True",
                "upstream would replace a frame without labels by a random one of its "
                "sequence, breaking the streaming order",
            )
        if sampler not in (None, STREAM_SAMPLER) or runner != ITER_RUNNER:
            raise refuse(
                "data.shuffler_sampler.type / runner.type",
                (sampler, runner),
                f"({STREAM_SAMPLER!r}, {ITER_RUNNER!r}) with seq_mode=True",
            )
        return TrainingMode(STREAMING, runner=runner)
    if sampler not in (None, GROUP_SAMPLER):
        raise refuse("data.shuffler_sampler.type", sampler, f"{GROUP_SAMPLER!r} with seq_mode=False")
    if runner not in (ITER_RUNNER, EPOCH_RUNNER):
        raise refuse("runner.type", runner, f"{ITER_RUNNER!r} or {EPOCH_RUNNER!r}")
    queue = values["queue_length"]
    name = SINGLE_FRAME if queue == 1 else SLIDING_WINDOW
    if values["filter_empty_gt"] and values["num_frame_losses"] > queue:
        raise refuse(
            "data.train.num_frame_losses",
            values["num_frame_losses"],
            f"at most queue_length={queue} with filter_empty_gt=True",
            "upstream's check indexes the last num_frame_losses frames of the queue",
        )
    return TrainingMode(
        name,
        queue_length=queue,
        random_length=values["random_length"] if queue > 1 else 0,  # a queue of 1 is [index] whatever it is
        num_frame_losses=values["num_frame_losses"],
        filter_empty_gt=values["filter_empty_gt"],
        runner=runner,
    )


def eval_mode_from(cfg: Any, split: str, class_names: tuple[str, ...]) -> TrainingMode:
    """The test mode of ``data.<split>`` (``test``: ``tools/test.py``; ``val``: the evaluation hook):
    upstream's ``prepare_test_data``, one frame per sample through the test pipeline, in the order
    of the ``nonshuffler_sampler``. :class:`UnsupportedConfigError` names the first value the loader
    does not reproduce."""
    if split not in TEST_SPLITS:
        raise ValueError(f"split must be one of {TEST_SPLITS}, got {split!r}")
    data = _get(cfg, "data", {}) or {}
    test = _get(data, split, {}) or {}
    if isinstance(test, list | tuple):
        raise refuse(
            f"data.{split}",
            f"a list of {len(test)} datasets",
            "one dataset dict",
            "tools/test.py's concatenated test sets",
            action="evaluate",
        )
    _check_dataset(test, dataset_values(test), class_names, split)
    per_gpu = _get(test, "samples_per_gpu", 1)
    if per_gpu != 1 or not is_int(per_gpu):
        raise refuse(
            f"data.{split}.samples_per_gpu",
            per_gpu,
            "1",
            "the streaming model tests one frame at a time (forward_test takes the first sample)",
            action="evaluate",
        )
    sampler_cfg = _get(data, "nonshuffler_sampler")
    sampler = _get(sampler_cfg, "type", TEST_SAMPLER) if sampler_cfg is not None else TEST_SAMPLER
    if sampler != TEST_SAMPLER:
        raise refuse("data.nonshuffler_sampler.type", sampler, repr(TEST_SAMPLER), action="evaluate")
    extra = sorted(set(sampler_cfg or {}) - {"type"})
    if extra:
        raise refuse(
            f"data.nonshuffler_sampler.{extra[0]}",
            _get(sampler_cfg, extra[0]),
            "no other key",
            action="evaluate",
        )
    return TrainingMode(TEST)
