# CPU smoke run of PETRv1 r50 (single-frame training) -- derived from
# projects/configs/PETRv1/petrv1_r50_flash_704_24e.py, changed only where a CPU run needs it, as
# ./stream_petr_r50_cpu_smoke.py is: no pretrained weights, fp32 OptimizerHook, no activation
# checkpointing, batch 1 per process, a short IterBasedRunner schedule (the epoch-based
# DistributedGroupSampler stays: IterBasedRunner walks its epochs), a log line per iteration.
_base_ = ["../PETRv1/petrv1_r50_flash_704_24e.py"]

num_iters = 5  # `nox -s train_dali -- --iters N` overrides runner.max_iters and the checkpoint interval

model = dict(
    img_backbone=dict(pretrained=None, with_cp=False),
    pts_bbox_head=dict(transformer=dict(decoder=dict(transformerlayers=dict(with_cp=False)))),
)

data = dict(samples_per_gpu=1, workers_per_gpu=1)

optimizer_config = dict(_delete_=True, grad_clip=dict(max_norm=35, norm_type=2))
lr_config = dict(warmup_iters=2)
total_epochs = None  # custom_train_detector asserts total_epochs == runner.max_epochs (None: no epochs)
runner = dict(_delete_=True, type="IterBasedRunner", max_iters=num_iters, max_epochs=None)
checkpoint_config = dict(interval=num_iters, max_keep_ckpts=1)
evaluation = dict(interval=num_iters)
log_config = dict(interval=1, hooks=[dict(type="TextLoggerHook")])
dist_params = dict(backend="gloo")
