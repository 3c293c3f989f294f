"""Every config value the loader reads is checked when the loader is built, naming key and value."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
import torch
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.loader import build_loader
from dali_streampetr.settings import ConfigValueError
from loader_data import tiny_config


def _set(cfg: dict, path: str, value) -> dict:
    cfg = copy.deepcopy(cfg)
    *parents, leaf = path.split(".")
    node = cfg
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return cfg


BAD = [
    # the cases
    ("data.train.seq_split_num", 0, "an integer >= 1 or 'all'"),
    ("data.train.seq_split_num", "2", "an integer >= 1 or 'all'"),
    ("data_loading_config.num_threads", 0, "an integer in [1, 256]"),
    ("data_loading_config.prefetch_queue_depth", 0, "an integer in [1, 64]"),
    ("data.samples_per_gpu", -1, "an integer >= 1"),
    ("data_loading_config.py_num_workers", -1, "an integer in [0, 64]"),
    ("data_loading_config.roi_decode", "no", "True or False"),
    # the other DALI knobs
    ("data_loading_config.device", "cuda", "'cpu' or 'gpu'"),
    ("data_loading_config.image_path", "faster", "'exact' or 'fast'"),
    ("data_loading_config.image_path", True, "'exact' or 'fast'"),
    ("data_loading_config.on_bad_image", "ignore", "'raise' or 'skip'"),
    ("data_loading_config.replicate_dataset_per_gpu", 1, "True or False"),
    ("data_loading_config.offset_order_per_rank", None, "True or False"),
    ("data_loading_config.log_slots", "yes", "True or False"),
    ("data_loading_config.trusted_pickle", "True", "True or False"),
    ("data_loading_config.batch_timeout_s", 0, "a number of seconds > 0"),
    ("data_loading_config.batch_timeout_s", float("inf"), "a number of seconds > 0"),
    ("data_loading_config.start_timeout_s", -1, "a number of seconds > 0"),
    ("data_loading_config.max_bad_images", -1, "an integer >= 0"),
    ("data_loading_config.num_threads", 2.5, "an integer in [1, 256]"),
    # what comes from the StreamPETR config
    ("data.samples_per_gpu", True, "an integer >= 1"),
    ("img_norm_cfg.std", [58.4, 0.0, 57.4], "3 finite positive numbers"),
    ("img_norm_cfg.mean", [1.0, 2.0], "3 finite numbers"),
    ("img_norm_cfg.to_rgb", 1, "True or False"),
    ("point_cloud_range", [-51.2, -51.2, -5.0, 51.2, -60.0, 3.0], "with min < max"),
    ("point_cloud_range", [0.0] * 5, "6 finite numbers"),
    ("class_names", ["car", "car"], "a non-empty list of distinct class names"),
    ("ida_aug_conf.resize_lim", (0.55, 0.38), "with low <= high"),
    ("ida_aug_conf.resize_lim", (-0.1, 0.5), "positive numbers"),
    ("ida_aug_conf.final_dim", (64.0, 176), "2 positive integers"),
    ("ida_aug_conf.bot_pct_lim", (0.0, 1.0), "numbers in [0, 1)"),
    ("ida_aug_conf.rot_lim", (-5.4, 5.4), "(0.0, 0.0)"),
    ("ida_aug_conf.H", "225", "an integer >= 1"),
    ("ida_aug_conf.W", 0, "an integer >= 1"),
    ("ida_aug_conf.rand_flip", "yes", "True or False"),
]


@pytest.mark.parametrize(("key", "value", "allowed"), BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_bad_value_names_key_value_and_allowed_range(tiny_root, key, value, allowed):
    with pytest.raises(ConfigValueError) as err:
        build_loader(_set(tiny_config(), key, value), tiny_root)
    msg = str(err.value)
    shown = repr(tuple(value)) if isinstance(value, list) else repr(value)  # lists are read as tuples
    assert key in msg and shown in msg and allowed in msg, msg


def test_pipeline_step_values_are_checked_by_name():
    cfg = tiny_config()
    cfg["train_pipeline"] = [{"type": "GlobalRotScaleTransImage", "scale_ratio_range": [1.05, 0.95]}]
    with pytest.raises(ConfigValueError, match=r"GlobalRotScaleTransImage\.scale_ratio_range .*low <= high"):
        loader_config_from(cfg)


def test_a_crop_larger_than_the_smallest_resize_is_refused():
    cfg = _set(tiny_config(), "ida_aug_conf.final_dim", (128, 176))
    with pytest.raises(ConfigValueError, match=re.escape("leaves 85 rows, fewer than final_dim[0]=128")):
        loader_config_from(cfg)


def test_overrides_are_checked_too(tiny_root):
    with pytest.raises(ConfigValueError, match="data_loading_config.num_threads must be"):
        build_loader(tiny_config(), tiny_root, num_threads="2")


def test_good_values_of_every_kind_pass():
    cfg = loader_config_from(
        tiny_config(batch_timeout_s=5, max_bad_images=0, trusted_pickle=True, py_num_workers=0),
        seq_split_num="all",
    )
    assert cfg.batch_timeout_s == 5 and cfg.max_bad_images == 0 and cfg.seq_split_num == "all"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_gpu_device_without_cuda_names_the_key(tiny_root):
    with pytest.raises(ConfigValueError, match=r"data_loading_config\.device='gpu' needs CUDA"):
        build_loader(tiny_config(device="gpu"), tiny_root)


def test_a_loader_built_from_read_settings_uses_them_as_they_are(tiny_root, monkeypatch):
    """The config is read once per loader: given the LoaderConfig a caller read (as the runner
    does), build_loader reads no config again; overrides are checked as on a config."""
    import dali_streampetr.loader as loader_module

    settings = loader_config_from(tiny_config())

    def read_again(*args, **kwargs):
        raise AssertionError("the config was read a second time")

    monkeypatch.setattr(loader_module, "loader_config_from", read_again)
    with build_loader(settings, tiny_root) as loader:
        assert loader.cfg is settings
    with pytest.raises(ConfigValueError, match="data_loading_config.num_threads"):
        build_loader(settings, tiny_root, num_threads=0)


@pytest.mark.parametrize(
    ("flags", "train", "test"),
    [
        ({}, False, False),  # upstream's DataLoader everywhere
        ({"use_dali_pipeline": True}, True, True),  # the test loader follows the training one
        ({"use_dali_pipeline": True, "use_dali_test_pipeline": False}, True, False),
        ({"use_dali_test_pipeline": True}, False, True),
        ({"use_dali_pipeline": False, "use_dali_test_pipeline": True}, False, True),
    ],
)
def test_uses_dali_is_one_rule_for_train_val_and_test(flags: dict, train: bool, test: bool) -> None:
    """The one decision the patched tools/train.py, tools/test.py and the --validate hook ask."""
    from dali_streampetr import uses_dali

    cfg = {"data": {}, **flags}
    assert (uses_dali(cfg, "train"), uses_dali(cfg, "val"), uses_dali(cfg, "test")) == (train, test, test)


def test_uses_dali_names_an_unknown_split() -> None:
    from dali_streampetr import uses_dali

    with pytest.raises(ValueError, match="split='eval'"):
        uses_dali({"use_dali_pipeline": True}, "eval")


def flag_reads(roots: list[Path], repo: Path) -> list[str]:
    """``file:line 'flag'`` of every string constant naming a loader flag in the Python files of
    ``roots``, but for those of ``settings.uses_dali`` (the one rule)."""
    found = []
    for path in sorted(p for root in roots for p in root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ours = {
            id(node)
            for fn in tree.body
            if isinstance(fn, ast.FunctionDef) and fn.name == "uses_dali"
            for node in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in LOADER_FLAGS and id(node) not in ours:
                found.append(f"{path.relative_to(repo).as_posix()}:{node.lineno} {node.value!r}")
    return found


LOADER_FLAGS = ("use_dali_pipeline", "use_dali_test_pipeline")
REPO = Path(__file__).resolve().parents[2]


def test_the_loader_flags_are_read_by_uses_dali_only() -> None:
    """Training, validation and test ask :func:`uses_dali`; no other code reads the flags."""
    assert flag_reads([REPO / "overlay", REPO / "scripts"], REPO) == []


def test_a_second_reading_of_a_flag_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "settings.py").write_text(
        "def uses_dali(cfg, split):\n    return cfg.get('use_dali_pipeline')\n"
    )
    (tmp_path / "pkg" / "choice.py").write_text(
        "def f(cfg):\n    return cfg.get('use_dali_test_pipeline', cfg.get('use_dali_pipeline'))\n"
        "MESSAGE = 'set use_dali_pipeline=False'\n"
    )
    assert flag_reads([tmp_path / "pkg"], tmp_path) == [
        "pkg/choice.py:2 'use_dali_test_pipeline'",
        "pkg/choice.py:2 'use_dali_pipeline'",
    ]
