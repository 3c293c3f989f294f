# The CPU smoke run (../cpu/stream_petr_r50_cpu_smoke.py) on the DALI loader: DALI on CPU threads
# (the defaults), and a log of the (scene, frame) every batch slot received, per rank.
_base_ = ["../cpu/stream_petr_r50_cpu_smoke.py"]

use_dali_pipeline = True
data_loading_config = dict(device="cpu", log_slots=True)
