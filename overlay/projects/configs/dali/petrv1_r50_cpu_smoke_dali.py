# The PETRv1 CPU smoke run (../cpu/petrv1_r50_cpu_smoke.py) on the DALI loader: DALI on CPU threads,
# a log of the frame every batch slot received, per rank. Single-frame training reproduces upstream's
# distributed sampler: run it with a process group (train_dali launches one, also for one process).
_base_ = ["../cpu/petrv1_r50_cpu_smoke.py"]

use_dali_pipeline = True
data_loading_config = dict(device="cpu", log_slots=True)
