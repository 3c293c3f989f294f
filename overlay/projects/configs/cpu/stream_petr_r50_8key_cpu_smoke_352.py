# CPU smoke run of the StreamPETR r50 8-key sliding-window config (8 frames per sample, 2 with
# gradients) -- derived from projects/configs/StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py
# with the CPU changes of ./stream_petr_r50_cpu_smoke.py (no pretrained weights, fp32 OptimizerHook,
# no activation checkpointing, a short IterBasedRunner schedule over the epoch-based
# DistributedGroupSampler, a log line per iteration) and the image size of
# ./stream_petr_r50_cpu_smoke_352.py (final_dim 128x352: 48 images per sample). Batch 2 instead of
# upstream's 1: with batch 1, Petr3D.extract_img_feat squeezes the image view in place
# (img.squeeze_()) once for the frames with gradients and again for the earlier frames; in fp32
# (no Fp16OptimizerHook copy on the CPU) the backbone's saved input is that view, and backward fails
# ("modified by an inplace operation") whenever GridMask (p = 0.7) leaves the image as is.
# The pipeline is restated because a child config cannot edit the parent's list in place.
_base_ = ["../StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py"]

num_iters = 5  # `nox -s train_dali -- --iters N` overrides runner.max_iters and the checkpoint interval

model = dict(
    img_backbone=dict(pretrained=None, with_cp=False),
    pts_bbox_head=dict(transformer=dict(decoder=dict(transformerlayers=dict(with_cp=False)))),
)

optimizer_config = dict(_delete_=True, grad_clip=dict(max_norm=35, norm_type=2))
lr_config = dict(warmup_iters=2)
total_epochs = None  # custom_train_detector asserts total_epochs == runner.max_epochs (None: no epochs)
runner = dict(_delete_=True, type="IterBasedRunner", max_iters=num_iters, max_epochs=None)
checkpoint_config = dict(interval=num_iters, max_keep_ckpts=1)
evaluation = dict(interval=num_iters)
log_config = dict(interval=1, hooks=[dict(type="TextLoggerHook")])
dist_params = dict(backend="gloo")

point_cloud_range = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]
img_norm_cfg = dict(mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True)
class_names = [
    'car', 'truck', 'construction_vehicle', 'bus', 'trailer', 'barrier',
    'motorcycle', 'bicycle', 'pedestrian', 'traffic_cone',
]  # fmt: skip
collect_keys = [
    "lidar2img",
    "intrinsics",
    "extrinsics",
    "timestamp",
    "img_timestamp",
    "ego_pose",
    "ego_pose_inv",
]
ida_aug_conf = {
    "resize_lim": (0.19, 0.275),
    "final_dim": (128, 352),
    "bot_pct_lim": (0.0, 0.0),
    "rot_lim": (0.0, 0.0),
    "H": 900,
    "W": 1600,
    "rand_flip": True,
}
train_pipeline = [
    dict(type="LoadMultiViewImageFromFiles", to_float32=True),
    dict(
        type="LoadAnnotations3D",
        with_bbox_3d=True,
        with_label_3d=True,
        with_bbox=True,
        with_label=True,
        with_bbox_depth=True,
    ),
    dict(type="ObjectRangeFilter", point_cloud_range=point_cloud_range),
    dict(type="ObjectNameFilter", classes=class_names),
    dict(type="ResizeCropFlipRotImage", data_aug_conf=ida_aug_conf, training=True),
    dict(
        type="GlobalRotScaleTransImage",
        rot_range=[-0.3925, 0.3925],
        translation_std=[0, 0, 0],
        scale_ratio_range=[0.95, 1.05],
        reverse_angle=True,
        training=True,
    ),
    dict(type="NormalizeMultiviewImage", **img_norm_cfg),
    dict(type="PadMultiViewImage", size_divisor=32),
    dict(type="PETRFormatBundle3D", class_names=class_names, collect_keys=collect_keys + ["prev_exists"]),
    dict(
        type="Collect3D",
        keys=["gt_bboxes_3d", "gt_labels_3d", "img", "gt_bboxes", "gt_labels", "centers2d", "depths"]
        + ["prev_exists"]
        + collect_keys,
        meta_keys=(
            "filename",
            "ori_shape",
            "img_shape",
            "pad_shape",
            "scale_factor",
            "flip",
            "box_mode_3d",
            "box_type_3d",
            "img_norm_cfg",
            "scene_token",
            "gt_bboxes_3d",
            "gt_labels_3d",
        ),  # fmt: skip
    ),
]
data = dict(samples_per_gpu=2, workers_per_gpu=1, train=dict(pipeline=train_pipeline))
