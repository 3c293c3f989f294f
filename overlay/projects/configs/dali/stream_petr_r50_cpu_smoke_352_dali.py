# The quarter-pixel CPU smoke run (final_dim 128x352) on the DALI loader, as
# stream_petr_r50_cpu_smoke_dali.py (mmcv forbids keys shared by two bases, hence no common base).
_base_ = ["../cpu/stream_petr_r50_cpu_smoke_352.py"]

use_dali_pipeline = True
data_loading_config = dict(device="cpu", log_slots=True)
