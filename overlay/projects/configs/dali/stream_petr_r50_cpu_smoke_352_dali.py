# The quarter-pixel CPU smoke run (final_dim 128x352) on the DALI loader; the DALI block is the
# one of stream_petr_r50_cpu_smoke_dali.py (mmcv forbids keys shared by two bases).
_base_ = ["../cpu/stream_petr_r50_cpu_smoke_352.py"]

use_dali_pipeline = True
data_loading_config = dict(
    device="cpu",
    num_threads=2,
    py_num_workers=1,
    prefetch_queue_depth=2,
    roi_decode=True,
    replicate_dataset_per_gpu=False,
    offset_order_per_rank=False,
    on_bad_image="raise",
    log_slots=True,
)
