# The quarter-pixel CPU smoke run on the DALI loader, checkpointing and requeueing on SLURM's
# warning signal (the SLURM smoke run, `nox -s slurm_smoke`).
_base_ = ["./stream_petr_r50_cpu_smoke_352_dali.py", "../slurm/checkpoint_on_signal.py"]
