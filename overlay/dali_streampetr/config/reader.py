"""A StreamPETR config (plain dict or mmcv ``Config``) read into a :class:`~.settings.LoaderConfig`,
with the training mode its dataset, sampler and runner select, and a refusal, by key, of every
value the loader does not reproduce.

A config whose ``data.train`` names its ``type`` (every upstream config) is read as upstream's
dataset reads it: an absent key has the dataset's default (``seq_mode=False``, ``queue_length=8``,
``filter_empty_gt=True``, ``use_valid_flag=False`` ...). A bare dict without ``data.train.type``
(the loader used on its own) has the loader's streaming defaults for absent keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from ..batch_schema import STACKED_KEYS
from .settings import (
    DALI_KNOBS,
    DATASET_TYPE,
    EPOCH_RUNNER,
    GROUP_SAMPLER,
    GRST_KEYS,
    IDA_KEYS,
    ITER_RUNNER,
    SINGLE_FRAME,
    SLIDING_WINDOW,
    STREAM_SAMPLER,
    STREAMING,
    TEST,
    TEST_SAMPLER,
    TEST_SPLITS,
    AugConfig,
    ConfigValueError,
    LoaderConfig,
    TrainingMode,
    is_bool,
    is_int,
    refuse,
)  # fmt: skip
from .train_pipeline import check_pipeline

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


def _aug_config(ida: Mapping, grst: Mapping) -> AugConfig:
    """``ida_aug_conf`` and the GlobalRotScaleTransImage step (upstream's defaults where absent)."""
    kwargs: dict[str, Any] = {k: _seq(ida[k]) for k in IDA_KEYS if k in ida}
    if grst:
        kwargs["reverse_angle"] = False  # upstream's default, when the step does not set it
    kwargs.update({k: _seq(_get(grst, k)) for k in GRST_KEYS if _get(grst, k) is not None})
    return AugConfig(**kwargs)


def _common(cfg: Any, dataset: Any, pipeline: Any) -> dict[str, Any]:
    """The settings both loaders read alike: normalisation, range, classes, the pad's divisor."""
    kwargs: dict[str, Any] = {}
    norm = _get(cfg, "img_norm_cfg", {}) or {}
    for key in ("mean", "std", "to_rgb"):
        if _get(norm, key) is not None:
            kwargs[key] = _seq(_get(norm, key))
    if _get(cfg, "point_cloud_range") is not None:
        kwargs["point_cloud_range"] = _seq(_get(cfg, "point_cloud_range"))
    names = _get(cfg, "class_names") or _get(dataset, "classes")
    if names:
        kwargs["class_names"] = _seq(names)
    pad = _find_transform(pipeline, "PadMultiViewImage")
    if _get(pad, "size_divisor") is not None:
        kwargs["size_divisor"] = _get(pad, "size_divisor")
    return kwargs


def _knobs(cfg: Any) -> dict[str, Any]:
    """The ``data_loading_config`` block; an unknown key is refused by name."""
    dlc = _get(cfg, "data_loading_config", {}) or {}
    unknown = set(dlc) - set(DALI_KNOBS)
    if unknown:
        raise ConfigValueError(
            f"unknown data_loading_config keys: {sorted(unknown)} (known: {list(DALI_KNOBS)})"
        )
    return {k: dlc[k] for k in DALI_KNOBS if k in dlc}


def knobs_from(cfg: Any) -> LoaderConfig:
    """The ``data_loading_config`` block alone, checked as :func:`loader_config_from` checks it (the
    other settings at their defaults): for a caller that needs a knob before the whole config is read
    (the DALI device of the process's distributed arguments)."""
    return LoaderConfig(**_knobs(cfg))


def loader_config_from(cfg: Any, split: str = "train", **overrides: Any) -> LoaderConfig:
    """Read ``ida_aug_conf``, ``img_norm_cfg``, ``point_cloud_range``, ``class_names``,
    ``data.samples_per_gpu``, the dataset keys of ``data.train`` (the training mode:
    :func:`training_mode_from`), its pipeline (``data.train.pipeline``, else ``train_pipeline``: every step
    checked, :mod:`.train_pipeline`) and the ``data_loading_config`` block; ``overrides`` win over
    all of them. ``split='test'`` or ``'val'``: the test loader of ``data.test`` / ``data.val``
    instead (:func:`eval_config_from`). Raises :class:`~.settings.ConfigValueError` (or its subclass
    :class:`~.settings.UnsupportedConfigError`) naming the first key the loader cannot use."""
    if split != "train":
        return eval_config_from(cfg, split, **overrides)
    data = _get(cfg, "data", {}) or {}
    train = _get(data, "train", {}) or {}
    pipeline = _get(train, "pipeline") or _get(cfg, "train_pipeline")
    ida = dict(_get(cfg, "ida_aug_conf", {}) or {})
    kwargs: dict[str, Any] = {"aug": _aug_config(ida, _find_transform(pipeline, "GlobalRotScaleTransImage"))}
    kwargs.update(_common(cfg, train, pipeline))
    if _get(data, "samples_per_gpu") is not None:
        kwargs["samples_per_gpu"] = _get(data, "samples_per_gpu")
    kwargs["seq_split_num"] = dataset_values(train)["seq_split_num"]
    if _get(train, "ann_file"):
        kwargs["ann_file"] = str(_get(train, "ann_file"))
    kwargs.update(_knobs(cfg))
    _check_overrides(overrides)
    kwargs.update(overrides)
    result = LoaderConfig(**kwargs)  # checks every value (config/settings.py)
    if "mode" not in overrides:
        result = replace(result, mode=training_mode_from(cfg, result.class_names))
    if pipeline is not None:
        check_pipeline(pipeline, result)
    if result.mode.epoch_based and result.offset_order_per_rank:
        raise refuse("data_loading_config.offset_order_per_rank", True, "False with seq_mode=False",
                     "upstream's DistributedGroupSampler takes no per-rank seed offset")  # fmt: skip
    return result


def _check_overrides(overrides: dict[str, Any]) -> None:
    bad = set(overrides) - {f.name for f in fields(LoaderConfig)}
    if bad:
        raise TypeError(f"unknown loader settings: {sorted(bad)}")


def eval_config_from(cfg: Any, split: str = "test", **overrides: Any) -> LoaderConfig:
    """The test loader's settings from ``data.<split>`` (``test``: ``tools/test.py``; ``val``: the
    evaluation hook of ``--validate``): the image keys of the test pipeline's ``data_aug_conf`` and
    its normalisation (else ``ida_aug_conf``, ``img_norm_cfg``), ``class_names``, the dataset's
    ``ann_file`` and ``samples_per_gpu`` (1, as ``tools/test.py``), its pipeline
    (``data.<split>.pipeline``, else ``test_pipeline``: every step checked, :mod:`.eval_pipeline`),
    the test sampler (:func:`eval_mode_from`) and the ``data_loading_config`` block (the
    same knobs as training; ``replicate_dataset_per_gpu`` and ``offset_order_per_rank`` do not
    apply: upstream's test loader always shards by the real rank)."""
    from .eval_pipeline import check_eval_pipeline

    data = _get(cfg, "data", {}) or {}
    test = _get(data, split, {}) or {}
    if isinstance(test, list | tuple):
        test = {}  # refused by name below (eval_mode_from)
    pipeline = _get(test, "pipeline") or _get(cfg, "test_pipeline")
    # the values the test transforms themselves are given (a config may leave its test pipeline at
    # other image settings than the top-level ida_aug_conf it trains with), else the top-level ones
    ida = _get(_find_transform(pipeline, "ResizeCropFlipRotImage"), "data_aug_conf")
    ida = dict(ida or _get(cfg, "ida_aug_conf", {}) or {})
    kwargs: dict[str, Any] = {"aug": AugConfig(**{k: _seq(ida[k]) for k in IDA_KEYS if k in ida})}
    kwargs.update(_common(cfg, test, pipeline))
    norm = _find_transform(pipeline, "NormalizeMultiviewImage")
    kwargs.update({k: _seq(_get(norm, k)) for k in ("mean", "std", "to_rgb") if _get(norm, k) is not None})
    kwargs["samples_per_gpu"] = _get(test, "samples_per_gpu", 1)
    if _get(test, "ann_file"):
        kwargs["ann_file"] = str(_get(test, "ann_file"))
    kwargs.update(_knobs(cfg))
    _check_overrides(overrides)
    kwargs.update(overrides)
    result = LoaderConfig(**kwargs)
    if "mode" not in overrides:
        result = replace(result, mode=eval_mode_from(cfg, split, result.class_names))
    if pipeline is None:
        raise refuse(
            f"data.{split}.pipeline",
            None,
            "upstream's test pipeline",
            "the config has none",
            action="evaluate",
        )
    check_eval_pipeline(pipeline, result, split)
    return result


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
