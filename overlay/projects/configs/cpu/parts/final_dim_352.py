# The image pipeline at final_dim 128x352 (resize range halved: a quarter of the pixels), run into a
# smoke config's namespace by `globals().update(runpy.run_path(...))`. The pipeline is restated
# because a child config cannot edit its parent's list in place; the config sets
# data.train.pipeline = train_pipeline.
point_cloud_range = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]
img_norm_cfg = dict(mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True)
class_names = [
    'car', 'truck', 'construction_vehicle', 'bus', 'trailer', 'barrier',
    'motorcycle', 'bicycle', 'pedestrian', 'traffic_cone',
]  # fmt: skip
collect_keys = [
    "lidar2img", "intrinsics", "extrinsics", "timestamp", "img_timestamp", "ego_pose", "ego_pose_inv",
]  # fmt: skip
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
            "filename", "ori_shape", "img_shape", "pad_shape", "scale_factor", "flip", "box_mode_3d",
            "box_type_3d", "img_norm_cfg", "scene_token", "gt_bboxes_3d", "gt_labels_3d",
        ),
    ),
]  # fmt: skip
