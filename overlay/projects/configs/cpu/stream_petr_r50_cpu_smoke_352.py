# The CPU smoke run at a quarter of the pixels: final_dim 128x352 (resize range halved), so a
# smoke iteration is several times faster. Only the image pipeline differs from the smoke config.
import runpy

_base_ = ["./stream_petr_r50_cpu_smoke.py"]

globals().update(runpy.run_path("{{ fileDirname }}/parts/final_dim_352.py"))
data = dict(train=dict(pipeline=train_pipeline))  # noqa: F821 (train_pipeline: final_dim_352.py)
