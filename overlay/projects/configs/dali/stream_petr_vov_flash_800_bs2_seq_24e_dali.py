# StreamPETR VoV-99 800x320 streaming training with the DALI loader (BGR, caffe normalisation).
# mmcv forbids keys shared by two bases, so the DALI block is restated (as in the r50 variant).
_base_ = ["../StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py"]

use_dali_pipeline = True
data_loading_config = dict(
    device="gpu",
    num_threads=4,
    py_num_workers=1,
    prefetch_queue_depth=2,
    roi_decode=True,
    replicate_dataset_per_gpu=False,
    offset_order_per_rank=False,
    on_bad_image="raise",
)
