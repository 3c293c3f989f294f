"""A StreamPETR config (plain dict or mmcv ``Config``) read into a :class:`~..settings.LoaderConfig`
for one split (:data:`SPLITS`: ``train``, ``test``, ``val``), which decides the keys read and the
sampling mode; every value the loader does not reproduce is refused by key. An absent dataset key has
upstream's default (:data:`UPSTREAM_DEFAULTS`), or the loader's streaming one (:data:`LOADER_DEFAULTS`)
in a bare dict without ``data.train.type``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..batch_schema import STACKED_KEYS
from ..sampling.eval_shards import checked_sharding
from ..sampling.modes import EvalPass, Queues, Streaming
from ..settings import (
    DALI_KNOBS,
    DATASET_TYPE,
    EPOCH_RUNNER,
    GROUP_SAMPLER,
    GRST_KEYS,
    IDA_KEYS,
    ITER_RUNNER,
    NUSCENES_CLASSES,
    SINGLE_FRAME,
    SLIDING_WINDOW,
    STREAM_SAMPLER,
    STREAMING,
    TEST_SAMPLER,
    AugConfig,
    ConfigValueError,
    LoaderConfig,
    SamplingMode,
    is_bool,
    is_int,
    refuse,
    uses_dali,
)  # fmt: skip
from ..settings import config_get as _get
from .transform_steps import TEST_STEPS, TRAIN_STEPS, StepTable, check_steps

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
# data.<split> keys the loader reads or reproduces; any other key is refused.
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


def _seq(value: Any) -> Any:
    """Lists become tuples (the config is frozen); anything else is kept for the checks to name."""
    return tuple(value) if isinstance(value, list | tuple) else value


def _find_step(steps: Any, name: str) -> Mapping:
    for step in steps or ():
        if _get(step, "type") == name:
            return step
    return {}


@dataclass(frozen=True)
class Split:
    """What reading ``data.<name>`` takes from the config beyond what every split reads alike."""

    name: str
    action: str  # refuse()'s: the switch that gives upstream's DataLoader back
    steps: StepTable  # its transform steps (.transform_steps)
    top_level_steps: str  # the config's list when data.<split>.pipeline is absent
    steps_required: bool  # a bare dict (the loader on its own) may train without a pipeline
    image_from_steps: bool  # the test steps' data_aug_conf / normalisation win over the top-level ones
    fixed: Callable[[Any], dict[str, Any]]  # dataset keys at the one value the loader reproduces
    extra_keys: frozenset[str]  # dataset keys beyond KNOWN_DATASET_KEYS
    batch: Callable[[Any, Any, Mapping[str, Any]], dict[str, Any]]  # (data, data.<split>, its values)
    # mode: (split, data, data.<split>, its values, the runner and test sharding) -> the sampling mode
    mode: Callable[[str, Any, Any, Mapping[str, Any], Mapping[str, Any]], SamplingMode]


def _train_batch(data: Any, part: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``data.samples_per_gpu`` and the dataset's ``seq_split_num``."""
    batch = {"seq_split_num": values["seq_split_num"]}
    if _get(data, "samples_per_gpu") is not None:
        batch["samples_per_gpu"] = _get(data, "samples_per_gpu")
    return batch


def _check_int(key: str, value: Any, lo: int) -> None:
    if not is_int(value) or value < lo:
        raise ConfigValueError(f"{key} must be an integer >= {lo}, got {value!r}")


def _train_mode(
    split: str, data: Any, train: Any, values: Mapping[str, Any], top: Mapping[str, Any]
) -> SamplingMode:
    """The training mode ``data.train`` selects with its sampler and runner: :class:`UnsupportedConfigError`
    names the first value the loader does not reproduce (the key, the value and what is supported)."""
    keys = _get(train, "collect_keys")  # a test sample is one frame: its dataset's collect_keys are not used
    if keys is not None and (len(set(keys)) != len(keys) or set(keys) != DATASET_COLLECT_KEYS):
        raise refuse("data.train.collect_keys", list(keys), f"the keys {sorted(DATASET_COLLECT_KEYS)}")
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
    runner = _get(top["runner"] or {}, "type", ITER_RUNNER if values["seq_mode"] else EPOCH_RUNNER)
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
        return Streaming()
    if sampler not in (None, GROUP_SAMPLER):
        raise refuse("data.shuffler_sampler.type", sampler, f"{GROUP_SAMPLER!r} with seq_mode=False")
    if runner not in (ITER_RUNNER, EPOCH_RUNNER):
        raise refuse("runner.type", runner, f"{ITER_RUNNER!r} or {EPOCH_RUNNER!r}")
    queue = values["queue_length"]
    if values["filter_empty_gt"] and values["num_frame_losses"] > queue:
        raise refuse(
            "data.train.num_frame_losses",
            values["num_frame_losses"],
            f"at most queue_length={queue} with filter_empty_gt=True",
            "upstream's check indexes the last num_frame_losses frames of the queue",
        )
    return Queues(
        queue_length=queue,
        random_length=values["random_length"] if queue > 1 else 0,  # a queue of 1 is [index] whatever it is
        num_frame_losses=values["num_frame_losses"],
        filter_empty_gt=values["filter_empty_gt"],
    )


def _test_mode(
    split: str, data: Any, part: Any, values: Mapping[str, Any], top: Mapping[str, Any]
) -> SamplingMode:
    """Upstream's ``prepare_test_data``, one frame per sample through the test pipeline, in dataset
    order, split between the ranks as ``data_loading_config.test_sharding`` says (``checked_sharding``:
    the rule upstream's DataLoader follows too, so both test loaders split alike)."""
    per_gpu = _get(part, "samples_per_gpu", 1)
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
    return EvalPass(sharding=top["test_sharding"])


def _test_split(name: str) -> Split:
    return Split(
        name=name,
        action="evaluate",
        steps=TEST_STEPS,
        top_level_steps="test_pipeline",
        steps_required=True,
        image_from_steps=True,
        # tools/test.py and the evaluation hook set test_mode=True (annotations are not read)
        fixed=lambda part: {"test_mode": True} if _get(part, "test_mode") is not None else {},
        extra_keys=frozenset({"samples_per_gpu"}),
        batch=lambda data, part, values: {"samples_per_gpu": _get(part, "samples_per_gpu", 1)},
        mode=_test_mode,
    )


SPLITS = {
    "train": Split(
        name="train",
        action="train",
        steps=TRAIN_STEPS,
        top_level_steps="train_pipeline",
        steps_required=False,
        image_from_steps=False,
        fixed=lambda part: {"test_mode": False, "use_valid_flag": True},
        extra_keys=frozenset(),
        batch=_train_batch,
        mode=_train_mode,
    ),
    "test": _test_split("test"),
    "val": _test_split("val"),
}
"""The splits: ``train`` for training, ``test`` for ``tools/test.py``, ``val`` for the evaluation
hook of ``--validate``."""


MODE_KNOBS = ("test_sharding",)
"""The ``data_loading_config`` keys read into a split's sampling mode, not into :class:`LoaderConfig`:
``test_sharding``, the test splits' ``EvalPass.sharding`` (``eval_shards.checked_sharding``)."""


def _knobs(cfg: Any) -> tuple[dict[str, Any], str]:
    """The ``data_loading_config`` block, read once: its :class:`LoaderConfig` keys and the test
    sharding. An unknown key or a bad ``test_sharding`` is refused whatever the split (a training run
    stops before it trains, not at its first evaluation)."""
    dlc = _get(cfg, "data_loading_config", {}) or {}
    unknown = set(dlc) - {*DALI_KNOBS, *MODE_KNOBS}
    if unknown:
        raise ConfigValueError(
            f"unknown data_loading_config keys: {sorted(unknown)} (known: {[*DALI_KNOBS, *MODE_KNOBS]})"
        )
    sharding = checked_sharding(_get(dlc, "test_sharding"), dali=uses_dali(cfg, "train"))
    return {k: dlc[k] for k in DALI_KNOBS if k in dlc}, sharding


def _image(cfg: Any, split: Split, steps: Any) -> dict[str, Any]:
    """The image settings: ``ida_aug_conf`` (the test steps' ``data_aug_conf`` first), the training
    GlobalRotScaleTransImage's parameters (upstream's defaults where absent), the normalisation
    (``img_norm_cfg``, the test steps' own first), the range, the classes and the pad's divisor."""
    resize = _find_step(steps, "ResizeCropFlipRotImage")
    ida = dict(
        (split.image_from_steps and _get(resize, "data_aug_conf")) or _get(cfg, "ida_aug_conf", {}) or {}
    )
    aug: dict[str, Any] = {k: _seq(ida[k]) for k in IDA_KEYS if k in ida}
    grst = {} if split.image_from_steps else _find_step(steps, "GlobalRotScaleTransImage")
    if grst:
        aug["reverse_angle"] = False  # upstream's default, when the step does not set it
    aug.update({k: _seq(_get(grst, k)) for k in GRST_KEYS if _get(grst, k) is not None})
    kwargs: dict[str, Any] = {"aug": AugConfig(**aug)}
    norms = [_get(cfg, "img_norm_cfg", {}) or {}]
    if split.image_from_steps:
        norms.append(_find_step(steps, "NormalizeMultiviewImage"))
    for norm in norms:
        kwargs.update(
            {k: _seq(_get(norm, k)) for k in ("mean", "std", "to_rgb") if _get(norm, k) is not None}
        )
    if _get(cfg, "point_cloud_range") is not None:
        kwargs["point_cloud_range"] = _seq(_get(cfg, "point_cloud_range"))
    pad = _find_step(steps, "PadMultiViewImage")
    if _get(pad, "size_divisor") is not None:
        kwargs["size_divisor"] = _get(pad, "size_divisor")
    return kwargs


def loader_config_from(cfg: Any, split: str = "train", **overrides: Any) -> LoaderConfig:
    """The settings of ``split`` (``train``; ``test``: ``tools/test.py``; ``val``: the evaluation hook)
    from ``cfg``: the image settings, the batch size, the dataset keys and the sampling mode they,
    the sampler and the runner select, the checked transform steps (:mod:`.transform_steps`), the
    split's files and the ``data_loading_config`` block; ``overrides`` win over all of them.
    Raises :class:`~..settings.ConfigValueError` (or :class:`~..settings.UnsupportedConfigError`)
    naming the first key the loader cannot use."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    spec = SPLITS[split]
    data = _get(cfg, "data", {}) or {}
    part = _get(data, split, {}) or {}
    if isinstance(part, list | tuple):
        raise refuse(
            f"data.{split}",
            f"a list of {len(part)} datasets",
            "one dataset dict",
            "tools/test.py's concatenated test sets",
            action=spec.action,
        )
    steps = _get(part, "pipeline") or _get(cfg, spec.top_level_steps)
    kwargs = _image(cfg, spec, steps)
    names = _get(cfg, "class_names") or _get(part, "classes")
    if names:
        kwargs["class_names"] = _seq(names)
    values = dataset_values(part)
    kwargs.update(spec.batch(data, part, values))
    for key in ("ann_file", "data_root"):  # the split's files, as upstream's dataset reads them
        if _get(part, key):
            kwargs[key] = str(_get(part, key))
    knobs, test_sharding = _knobs(cfg)
    kwargs.update(knobs)
    bad = set(overrides) - {f.name for f in fields(LoaderConfig)}
    if bad:
        raise TypeError(f"unknown loader settings: {sorted(bad)}")
    kwargs.update(overrides)
    if "mode" not in kwargs:
        _check_dataset(part, values, kwargs.get("class_names", NUSCENES_CLASSES), spec)
        top = {"runner": _get(cfg, "runner"), "test_sharding": test_sharding}  # the modes' top-level keys
        kwargs["mode"] = spec.mode(split, data, part, values, top)
    result = LoaderConfig(**kwargs)  # checks every value (settings.py)
    if steps is not None:
        check_steps(steps, spec.steps, f"data.{split}.pipeline", result)
    elif spec.steps_required:
        raise refuse(f"data.{split}.pipeline", None, "upstream's test pipeline", "the config has none",
                     action=spec.action)  # fmt: skip
    if result.mode.needs_process_group and result.offset_order_per_rank:  # Queues: DistributedGroupSampler
        raise refuse("data_loading_config.offset_order_per_rank", True, "False with seq_mode=False",
                     "upstream's DistributedGroupSampler takes no per-rank seed offset")  # fmt: skip
    return result


def dataset_values(part: Any) -> dict[str, Any]:
    """The dataset keys of ``data.<split>`` with upstream's defaults (or the loader's, for a bare dict)."""
    defaults = UPSTREAM_DEFAULTS if _get(part, "type") is not None else LOADER_DEFAULTS
    return {k: _get(part, k, d) if _get(part, k) is not None else d for k, d in defaults.items()}


def declared_mode(cfg: Any) -> str:
    """The training mode a config's ``data.train`` asks for, refused or not (upstream's defaults)."""
    values = dataset_values(cfg.data.train)
    if values["seq_mode"]:
        return STREAMING
    return SINGLE_FRAME if values["queue_length"] == 1 else SLIDING_WINDOW


def _check_dataset(part: Any, values: dict[str, Any], class_names: Any, split: Split) -> None:
    """The dataset keys of ``data.<split>`` every split reads alike."""
    where, action = f"data.{split.name}", split.action
    kind = _get(part, "type")
    if kind is not None and kind != DATASET_TYPE:
        raise refuse(
            f"{where}.type",
            kind,
            repr(DATASET_TYPE),
            "the loader reproduces StreamPETR's dataset",
            action=action,
        )
    known = KNOWN_DATASET_KEYS | split.extra_keys
    unknown = sorted(set(part or {}) - known)
    if unknown:
        key = unknown[0]
        raise refuse(
            f"{where}.{key}",
            _get(part, key),
            f"the keys {sorted(known)}",
            "an unknown dataset key",
            action=action,
        )
    fixed = {**split.fixed(part), "load_interval": 1, "with_velocity": True, "box_type_3d": "LiDAR"}
    for key, want in fixed.items():
        if values[key] != want or type(values[key]) is not type(want):
            raise refuse(f"{where}.{key}", values[key], repr(want), action=action)
    fca = dict(values["file_client_args"] or {})
    if fca != {"backend": "disk"}:
        raise refuse(
            f"{where}.file_client_args",
            fca,
            "{'backend': 'disk'}",
            "the loader reads local files",
            action=action,
        )
    modality = values["modality"] or {}
    if not _get(modality, "use_camera", False):
        raise refuse(
            f"{where}.modality",
            dict(modality),
            "use_camera=True",
            "the loader reads the cameras",
            action=action,
        )
    classes = _get(part, "classes")
    if classes is not None and tuple(classes) != tuple(class_names):
        raise refuse(
            f"{where}.classes", list(classes), f"the config's class_names {list(class_names)}", action=action
        )
