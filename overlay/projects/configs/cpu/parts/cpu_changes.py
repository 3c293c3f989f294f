# The changes every CPU smoke config of this folder makes to its upstream config, run into the
# config's namespace by `globals().update(runpy.run_path(...))` (a _base_ cannot carry them: mmcv
# refuses a key that two bases share, and these override the upstream config's keys):
#  * no pretrained weights: nothing is downloaded (the backbone starts from random init);
#  * fp32 OptimizerHook instead of Fp16OptimizerHook (no half convolutions on CPU);
#  * no activation checkpointing (saves recomputation; memory is not the limit on CPU);
#  * batch 1 per process, a short schedule (the config sets the IterBasedRunner), a log line per
#    iteration, gloo for multi-process runs.
num_iters = 5  # `nox -s train_dali -- --iters N` overrides runner.max_iters and the checkpoint interval

model = dict(
    img_backbone=dict(pretrained=None, with_cp=False),
    pts_bbox_head=dict(transformer=dict(decoder=dict(transformerlayers=dict(with_cp=False)))),
)

data = dict(samples_per_gpu=1, workers_per_gpu=1)

optimizer_config = dict(_delete_=True, grad_clip=dict(max_norm=35, norm_type=2))
lr_config = dict(warmup_iters=2)
checkpoint_config = dict(interval=num_iters, max_keep_ckpts=1)
evaluation = dict(interval=num_iters)
log_config = dict(interval=1, hooks=[dict(type="TextLoggerHook")])
dist_params = dict(backend="gloo")
