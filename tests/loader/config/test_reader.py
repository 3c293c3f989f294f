"""Every dataset, sampler, runner and pipeline value the loader does not reproduce is refused when
the loader config is read (before any pipeline exists), naming the key, the value and what is
supported; the values it reproduces select the training mode."""

from __future__ import annotations

import copy
import re

import pytest
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.sampling.modes import Streaming
from dali_streampetr.settings import SINGLE_FRAME, SLIDING_WINDOW, STREAMING, UnsupportedConfigError
from upstream_like import upstream_config


def _set(cfg: dict, path: str, value) -> dict:
    cfg = copy.deepcopy(cfg)
    node = cfg
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if value is _DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return cfg


_DELETE = object()
P = "data.train.pipeline"

# (mode of the base config, dotted path, value, text the error must hold besides the key)
REFUSED = [
    ("streaming", "data.train.seq_mode", "yes", "True or False"),
    ("streaming", "data.train.filter_empty_gt", True, "False with seq_mode=True"),
    ("streaming", "data.shuffler_sampler.type", "DistributedGroupSampler", "InfiniteGroupEachSample"),
    ("streaming", "runner", {"type": "EpochBasedRunner", "max_epochs": 2}, "IterBasedRunner"),
    ("streaming", "data.train.type", "NuScenesDataset", "CustomNuScenesDataset"),
    ("streaming", "data.train.use_valid_flag", _DELETE, "True"),
    ("streaming", "data.train.load_interval", 2, "1"),
    ("streaming", "data.train.with_velocity", False, "True"),
    ("streaming", "data.train.test_mode", True, "False"),
    ("streaming", "data.train.box_type_3d", "Camera", "'LiDAR'"),
    ("streaming", "data.train.modality.use_camera", False, "use_camera=True"),
    ("streaming", "data.train.file_client_args", {"backend": "petrel"}, "'disk'"),
    ("streaming", "data.train.classes", ["car"], "class_names"),
    ("streaming", "data.train.collect_keys", ["img", "img_metas"], "the keys"),
    ("streaming", "data.train.sweeps_num", 10, "an unknown dataset key"),
    ("streaming", "data.imgs_per_gpu", 2, "data.samples_per_gpu"),
    ("single_frame", "data.train.queue_length", 0, "an integer >= 1"),
    ("single_frame", "data.train.random_length", -1, "an integer >= 0"),
    ("single_frame", "data.train.num_frame_losses", 2, "at most queue_length=1"),
    ("single_frame", "data.shuffler_sampler.type", "InfiniteGroupEachSampleInBatchSampler",
     "'DistributedGroupSampler' with seq_mode=False"),
    ("single_frame", "runner.type", "DynamicRunner", "'IterBasedRunner' or 'EpochBasedRunner'"),
    ("streaming", f"{P}.5.type", "PhotoMetricDistortionMultiViewImage", "an unknown step"),
    ("streaming", f"{P}.4.type", "GlobalRotScaleTransImage", "upstream's order"),
    ("streaming", f"{P}.0.to_float32", False, "True"),
    ("streaming", f"{P}.0.color_type", "color", "'unchanged'"),
    ("streaming", f"{P}.1.with_bbox_depth", _DELETE, "True"),
    ("streaming", f"{P}.1.with_attr_label", True, "False"),
    ("streaming", f"{P}.2.point_cloud_range", [-60, -60, -5, 60, 60, 3], "the value the loader uses"),
    ("streaming", f"{P}.3.classes", ["car", "truck"], "the value the loader uses"),
    ("streaming", f"{P}.4.data_aug_conf.final_dim", (320, 800), "the value the loader uses"),
    ("streaming", f"{P}.4.training", False, "True"),
    ("streaming", f"{P}.4.filter_invisible", False, "True"),
    ("streaming", f"{P}.4.min_size", 4.0, "a parameter the loader does not know"),
    ("streaming", f"{P}.6.to_rgb", False, "the value the loader uses"),
    ("streaming", f"{P}.7.size_divisor", _DELETE, "the value the loader uses"),
    ("streaming", f"{P}.7.pad_val", 128, "0"),
    ("streaming", f"{P}.8.with_label", False, "True"),
    ("streaming", f"{P}.8.collect_keys", ["lidar2img", "prev_exists"], "the value the loader uses"),
    ("streaming", f"{P}.9.keys", ["img", "gt_bboxes_3d"], "the value the loader uses"),
    ("streaming", f"{P}.9.meta_keys", ("filename", "scene_token"), "the value the loader uses"),
]  # fmt: skip


IDS = [f"{m}:{p}={'<deleted>' if v is _DELETE else v!r}" for m, p, v, _ in REFUSED]


@pytest.mark.parametrize(("mode", "path", "value", "supported"), REFUSED, ids=IDS)
def test_a_value_the_loader_does_not_reproduce_is_refused_by_key(mode, path, value, supported):
    cfg = _set(upstream_config(mode), path, value)
    with pytest.raises(Exception) as err:
        loader_config_from(cfg)
    msg = str(err.value)
    key = re.sub(r"\.(\d+)(\.|$)", r"[\1]", path) if path.startswith(P) else path
    key = key.split(".type")[0] if key.endswith(".type") and not key.startswith(P) else key
    assert isinstance(err.value, ValueError) and supported in msg, msg
    assert key.split("[")[0] in msg or path.rsplit(".", 1)[0] in msg, msg


def test_the_streaming_config_selects_streaming():
    mode = loader_config_from(upstream_config("streaming")).mode
    assert mode.name == STREAMING and not mode.epoch_based and mode.queue_length == 1


def test_seq_mode_overrides_queue_values_as_upstream_does():
    cfg = upstream_config("streaming")
    cfg["data"]["train"].update(queue_length=8, random_length=3, num_frame_losses=2)
    mode = loader_config_from(cfg).mode
    assert mode == Streaming() and mode.queue_length == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda steps: steps.insert(6, {"type": "PhotoMetricDistortionMultiViewImage"}),
         r"pipeline\[6\]\.type='PhotoMetricDistortionMultiViewImage'"),
        (list.pop, r"pipeline\[9\]\.type=None.*the steps \['LoadMultiViewImageFromFiles'"),
    ],
    ids=["unknown", "missing"],
)  # fmt: skip
def test_an_unknown_or_missing_pipeline_step_names_its_position_and_type(change, message):
    cfg = upstream_config("streaming")
    change(cfg["data"]["train"]["pipeline"])
    with pytest.raises(UnsupportedConfigError, match=message):
        loader_config_from(cfg)


def test_the_dataset_pipeline_wins_over_the_top_level_variable():
    cfg = upstream_config("streaming")
    cfg["train_pipeline"] = []  # only data.train.pipeline reaches upstream's dataset
    assert loader_config_from(cfg).mode.name == STREAMING


def test_absent_reverse_angle_takes_upstream_default():
    cfg = upstream_config("streaming")
    del cfg["data"]["train"]["pipeline"][5]["reverse_angle"]
    assert loader_config_from(cfg).aug.reverse_angle is False


def test_absent_dataset_keys_take_upstream_defaults():
    cfg = upstream_config("streaming")
    del cfg["data"]["train"]["seq_split_num"]
    assert loader_config_from(cfg).seq_split_num == 1
    del cfg["data"]["train"]["filter_empty_gt"]  # upstream's default True breaks streaming
    with pytest.raises(UnsupportedConfigError, match=r"filter_empty_gt=True"):
        loader_config_from(cfg)


def test_the_8key_config_selects_the_sliding_window():
    mode = loader_config_from(upstream_config("sliding_window")).mode
    assert (mode.name, mode.queue_length, mode.random_length, mode.num_frame_losses) == (
        SLIDING_WINDOW,
        8,
        1,
        2,
    )


def test_the_petrv1_config_selects_single_frame_with_upstreams_filter_default():
    mode = loader_config_from(upstream_config("single_frame")).mode
    assert (mode.name, mode.epoch_based, mode.queue_length, mode.filter_empty_gt) == (
        SINGLE_FRAME,
        True,
        1,
        True,
    )


def test_offset_order_per_rank_is_refused_outside_streaming():
    cfg = upstream_config("single_frame", replicate_dataset_per_gpu=True, offset_order_per_rank=True)
    with pytest.raises(UnsupportedConfigError, match=r"offset_order_per_rank=True .*DistributedGroupSampler"):
        loader_config_from(cfg)
