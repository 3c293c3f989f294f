# CPU smoke run of PETRv1 r50 (single-frame training) -- derived from
# projects/configs/PETRv1/petrv1_r50_flash_704_24e.py with the CPU changes of
# ./stream_petr_r50_cpu_smoke.py (./parts/cpu_changes.py); the epoch-based DistributedGroupSampler
# stays: the IterBasedRunner walks its epochs.
import runpy

_base_ = ["../PETRv1/petrv1_r50_flash_704_24e.py"]

globals().update(runpy.run_path("{{ fileDirname }}/parts/cpu_changes.py"))
total_epochs = None  # custom_train_detector asserts total_epochs == runner.max_epochs (None: no epochs)
runner = dict(_delete_=True, type="IterBasedRunner", max_iters=num_iters, max_epochs=None)  # noqa: F821
