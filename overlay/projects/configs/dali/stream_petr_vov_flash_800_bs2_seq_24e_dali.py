# StreamPETR VoV-99 800x320 streaming training with the DALI loader (BGR, caffe normalisation).
# Every data_loading_config key and its default: stream_petr_r50_flash_704_bs2_seq_24e_dali.py.
# ../slurm/checkpoint_on_signal.py: checkpoint and requeue on SLURM's warning signal (docs/slurm.md)
_base_ = ["../StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py", "../slurm/checkpoint_on_signal.py"]

use_dali_pipeline = True
data_loading_config = dict(device="gpu", num_threads=4)
