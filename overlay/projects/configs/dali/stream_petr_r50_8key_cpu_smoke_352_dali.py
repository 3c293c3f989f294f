# The 8-key CPU smoke run (../cpu/stream_petr_r50_8key_cpu_smoke_352.py) on the DALI loader: DALI on
# CPU threads, a log of the frame every batch slot received, per rank. Sliding-window training
# reproduces upstream's distributed sampler: run it with a process group (train_dali launches one).
_base_ = ["../cpu/stream_petr_r50_8key_cpu_smoke_352.py"]

use_dali_pipeline = True
data_loading_config = dict(device="cpu", log_slots=True)
