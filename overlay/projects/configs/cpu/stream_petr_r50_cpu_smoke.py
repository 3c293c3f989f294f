# CPU smoke run of StreamPETR r50 (streaming, seq mode) -- derived from
# projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py, changed only where a CPU
# run needs it. Used by `nox -s train_torch`; a few iterations prove the training path works.
#  * no pretrained weights: nothing is downloaded (the backbone starts from random init);
#  * PETRMultiheadFlashAttention stays: without flash-attn it runs on torch SDPA in fp32
#    (patch make-flash-attn-optional); see *_plain_attn.py for nn.MultiheadAttention;
#  * fp32 OptimizerHook instead of Fp16OptimizerHook (no half convolutions on CPU);
#  * no activation checkpointing (saves recomputation; memory is not the limit on CPU);
#  * batch 1 per process, IterBasedRunner with a short schedule, a log line per iteration.
_base_ = ["../StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py"]

num_iters = 5  # `nox -s train_torch -- --iters N` overrides runner.max_iters and the checkpoint interval

model = dict(
    img_backbone=dict(pretrained=None, with_cp=False),
    pts_bbox_head=dict(transformer=dict(decoder=dict(transformerlayers=dict(with_cp=False)))),
)

data = dict(samples_per_gpu=1, workers_per_gpu=1)

optimizer_config = dict(_delete_=True, grad_clip=dict(max_norm=35, norm_type=2))
lr_config = dict(warmup_iters=2)
runner = dict(type="IterBasedRunner", max_iters=num_iters)
checkpoint_config = dict(interval=num_iters, max_keep_ckpts=1)
evaluation = dict(interval=num_iters)
log_config = dict(interval=1, hooks=[dict(type="TextLoggerHook")])
dist_params = dict(backend="gloo")
