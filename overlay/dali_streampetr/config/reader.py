"""A StreamPETR config (plain dict or mmcv ``Config``) read into a :class:`~.settings.LoaderConfig`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from .checks import ConfigValueError
from .modes import dataset_values, eval_mode_from, refuse, training_mode_from
from .settings import DALI_KNOBS, GRST_KEYS, IDA_KEYS, AugConfig, LoaderConfig
from .train_pipeline import check_pipeline


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
    :mod:`.modes`), its pipeline (``data.train.pipeline``, else ``train_pipeline``: every step
    checked, :mod:`.train_pipeline`) and the ``data_loading_config`` block; ``overrides`` win over
    all of them. ``split='test'`` or ``'val'``: the test loader of ``data.test`` / ``data.val``
    instead (:func:`eval_config_from`). Raises :class:`~.checks.ConfigValueError` (or its subclass
    :class:`~.modes.UnsupportedConfigError`) naming the first key the loader cannot use."""
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
    result = LoaderConfig(**kwargs)  # checks every value (config/checks.py)
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
    the test sampler (:func:`~.modes.eval_mode_from`) and the ``data_loading_config`` block (the
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
