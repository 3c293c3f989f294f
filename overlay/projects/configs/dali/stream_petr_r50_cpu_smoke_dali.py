# The CPU smoke run (../cpu/stream_petr_r50_cpu_smoke.py) on the DALI loader: DALI on CPU threads,
# one reader process, and a log of the (scene, frame) every batch slot received per rank.
_base_ = ["../cpu/stream_petr_r50_cpu_smoke.py"]

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
