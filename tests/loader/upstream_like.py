"""StreamPETR training configs as plain dicts (the values of the pinned upstream configs that the
loader reads), for hermetic tests of the config checks: streaming (r50 seq), single frame (PETRv1)
and sliding window (8-key)."""

from __future__ import annotations

import copy
from typing import Any

from loader_data import CLASSES

COLLECT = ["lidar2img", "intrinsics", "extrinsics", "timestamp", "img_timestamp", "ego_pose", "ego_pose_inv"]
IDA = {"resize_lim": (0.38, 0.55), "final_dim": (256, 704), "bot_pct_lim": (0.0, 0.0), "rot_lim": (0.0, 0.0),
       "H": 900, "W": 1600, "rand_flip": True}  # fmt: skip
NORM = {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375], "to_rgb": True}
PCR = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]
META = ("filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "flip", "box_mode_3d",
        "box_type_3d", "img_norm_cfg", "scene_token", "gt_bboxes_3d", "gt_labels_3d")  # fmt: skip


def train_pipeline(ida: dict | None = None) -> list[dict[str, Any]]:
    return [
        {"type": "LoadMultiViewImageFromFiles", "to_float32": True},
        {"type": "LoadAnnotations3D", "with_bbox_3d": True, "with_label_3d": True, "with_bbox": True,
         "with_label": True, "with_bbox_depth": True},
        {"type": "ObjectRangeFilter", "point_cloud_range": PCR},
        {"type": "ObjectNameFilter", "classes": CLASSES},
        {"type": "ResizeCropFlipRotImage", "data_aug_conf": dict(ida or IDA), "training": True},
        {"type": "GlobalRotScaleTransImage", "rot_range": [-0.3925, 0.3925], "translation_std": [0, 0, 0],
         "scale_ratio_range": [0.95, 1.05], "reverse_angle": True, "training": True},
        {"type": "NormalizeMultiviewImage", **NORM},
        {"type": "PadMultiViewImage", "size_divisor": 32},
        {"type": "PETRFormatBundle3D", "class_names": CLASSES, "collect_keys": [*COLLECT, "prev_exists"]},
        {"type": "Collect3D", "keys": ["gt_bboxes_3d", "gt_labels_3d", "img", "gt_bboxes", "gt_labels",
                                       "centers2d", "depths", "prev_exists", *COLLECT], "meta_keys": META},
    ]  # fmt: skip


def upstream_config(mode: str = "streaming", ida: dict | None = None, **dlc: Any) -> dict[str, Any]:
    """The config of one mode: ``streaming``, ``single_frame`` or ``sliding_window``."""
    train = {
        "type": "CustomNuScenesDataset",
        "data_root": "./data/nuscenes/",
        "ann_file": "./data/nuscenes/nuscenes2d_temporal_infos_train.pkl",
        "pipeline": train_pipeline(ida),
        "classes": CLASSES,
        "modality": {"use_lidar": False, "use_camera": True, "use_radar": False, "use_map": False,
                     "use_external": True},
        "collect_keys": [*COLLECT, "img", "prev_exists", "img_metas"],
        "test_mode": False,
        "use_valid_flag": True,
        "box_type_3d": "LiDAR",
    }  # fmt: skip
    if mode == "streaming":
        train.update(
            num_frame_losses=1, seq_split_num=2, seq_mode=True, queue_length=1, filter_empty_gt=False
        )
        sampler, runner = (
            "InfiniteGroupEachSampleInBatchSampler",
            {"type": "IterBasedRunner", "max_iters": 10},
        )
    elif mode == "single_frame":  # PETRv1: filter_empty_gt left at its default (True)
        train.update(num_frame_losses=1, queue_length=1)
        sampler, runner = "DistributedGroupSampler", {"type": "EpochBasedRunner", "max_epochs": 24}
    elif mode == "sliding_window":
        train.update(num_frame_losses=2, random_length=1, queue_length=8, filter_empty_gt=False)
        sampler, runner = "DistributedGroupSampler", {"type": "EpochBasedRunner", "max_epochs": 24}
    else:
        raise ValueError(mode)
    return copy.deepcopy(
        {
            "class_names": CLASSES,
            "point_cloud_range": PCR,
            "img_norm_cfg": NORM,
            "ida_aug_conf": ida or IDA,
            "train_pipeline": train_pipeline(ida),
            "runner": runner,
            "data": {
                "samples_per_gpu": 2,
                "workers_per_gpu": 4,
                "train": train,
                "shuffler_sampler": {"type": sampler},
                "nonshuffler_sampler": {"type": "DistributedSampler"},
            },
            "data_loading_config": dlc,
        }
    )
