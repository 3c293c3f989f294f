# Add to a config's _base_ list: on SIGUSR1 (sbatch --signal=USR1@120, SLURM's warning before the
# time limit) save a checkpoint at the next iteration boundary and requeue the job (docs/slurm.md).
# VERY_LOW: after the periodic CheckpointHook, so a checkpoint due anyway is not written twice.
custom_imports = dict(imports=["dali_streampetr.runner.requeue"], allow_failed_imports=False)
custom_hooks = [dict(type="CheckpointOnSignalHook", priority="VERY_LOW")]
