"""StreamPETR with the DALI loader on a real SLURM (`nox -s slurm_smoke`): the run and its checks in `.cli`.

- :mod:`.cli`            the arguments and the run: a SLURM, the three steps, the exit status
- :mod:`.runs`           shard (warned, requeued), replicate, evaluate, and the checks of each
- :mod:`.command_lines`  the srun lines of tools/train.py and of tools/slurm_test.sh
- :mod:`.jobs`           submit an sbatch job, poll its state, read its output per start
- :mod:`.which_slurm`    the SLURM that answers, or a local one for the run
- :mod:`.progress`       progress lines and the failure a check raises
"""

from __future__ import annotations

from .cli import main, parse_args

__all__ = ["main", "parse_args"]
