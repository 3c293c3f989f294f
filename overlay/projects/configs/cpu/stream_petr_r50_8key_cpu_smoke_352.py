# CPU smoke run of the StreamPETR r50 8-key sliding-window config (8 frames per sample, 2 with
# gradients) -- derived from projects/configs/StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py
# with the CPU changes of ./stream_petr_r50_cpu_smoke.py (./parts/cpu_changes.py; the IterBasedRunner
# walks the epoch-based DistributedGroupSampler) and the image size of ./stream_petr_r50_cpu_smoke_352.py
# (./parts/final_dim_352.py: 48 images per sample). Batch 2 instead of upstream's 1: with batch 1,
# Petr3D.extract_img_feat squeezes the image view in place (img.squeeze_()) once for the frames with
# gradients and again for the earlier frames; in fp32 (no Fp16OptimizerHook copy on the CPU) the
# backbone's saved input is that view, and backward fails ("modified by an inplace operation")
# whenever GridMask (p = 0.7) leaves the image as is.
import runpy

_base_ = ["../StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py"]

globals().update(runpy.run_path("{{ fileDirname }}/parts/cpu_changes.py"))
globals().update(runpy.run_path("{{ fileDirname }}/parts/final_dim_352.py"))
total_epochs = None  # custom_train_detector asserts total_epochs == runner.max_epochs (None: no epochs)
runner = dict(_delete_=True, type="IterBasedRunner", max_iters=num_iters, max_epochs=None)  # noqa: F821
data = dict(samples_per_gpu=2, workers_per_gpu=1, train=dict(pipeline=train_pipeline))  # noqa: F821
