"""The task command lines of the smoke run: tools/train.py for srun, tools/slurm_test.sh's srun line."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..evaluate import VAL_INFOS
from ..train import parse_args as train_args
from ..train import train_script

SLURM_CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali_slurm.py"
TASKS = 2


def train_line(
    args: argparse.Namespace, work_dir: Path, iters: int, interval: int, replicate: bool
) -> list[str]:
    """`python -u tools/train.py <slurm smoke config> ... --launcher=slurm --auto-resume` for srun."""
    argv = ["--loader", "dali", "--config", SLURM_CONFIG, "--data-root", str(args.data_root)]
    argv += ["--work-dir", str(work_dir), "--iters", str(iters), "--auto-resume"]
    argv += ["--replicate-dataset-per-gpu"] if replicate else []
    argv += ["--cfg-options", f"checkpoint_config.interval={interval}", "checkpoint_config.max_keep_ckpts=-1"]
    return [str(args.python), "-u", *train_script(train_args(argv)), "--launcher=slurm"]


def test_line(args: argparse.Namespace, checkpoint: Path, out: Path) -> list[str]:
    """tools/slurm_test.sh's srun line without --gres (a CPU partition has no GPUs to ask for)."""
    data = args.data_root.resolve()
    srun = ["srun", "-p", args.partition, "--job-name=slurm_smoke_test", f"--ntasks={TASKS}"]
    srun += [f"--ntasks-per-node={TASKS}", f"--cpus-per-task={args.cpus_per_task}", "--kill-on-bad-exit=1"]
    test = ["tools/test.py", SLURM_CONFIG, str(checkpoint), "--launcher=slurm", "--eval", "bbox"]
    test += ["--cfg-options", f"data.test.data_root={data}/", f"data.test.ann_file={data / VAL_INFOS}"]
    test += ["--eval-options", f"jsonfile_prefix={out}"]
    return [*srun, str(args.python), "-u", *test]
