"""Upstream tier: upstream's tools/slurm_train.sh and tools/slurm_test.sh (read from the pin) stay
unchanged, and the srun line the SLURM smoke run evaluates with is theirs without `--gres`."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from overlaytool.cache import mirror_path
from overlaytool.gitcmd import git_out
from overlaytool.pins import load_pin
from overlaytool.series import load_series
from overlaytool.targets import load_targets

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("tools/slurm_train.sh", "tools/slurm_test.sh")
UPSTREAM_SRUN = [
    "-p",
    "--job-name",
    "--gres",
    "--ntasks",
    "--ntasks-per-node",
    "--cpus-per-task",
    "--kill-on-bad-exit",
]
pytestmark = pytest.mark.upstream


def upstream_file(path: str) -> str:
    pin = load_pin(REPO_ROOT / "upstream" / "streampetr.toml")
    return git_out("show", f"{pin.commit}:{path}", cwd=mirror_path(pin))


def srun_options(script: str) -> list[str]:
    """The option names of the script's srun line (`--ntasks`, `-p`, ...), in order."""
    line = script.split("srun ", 1)[1].split(" python ", 1)[0].replace("\\\n", " ")
    return [word.split("=")[0] for word in shlex.split(line) if word.startswith("-")]


def test_no_patch_touches_upstreams_slurm_scripts() -> None:
    touched = {
        fp.path for target in load_targets(REPO_ROOT) for p in load_series(target.patch_dir) for fp in p.files
    }
    assert not touched & set(SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS)
def test_the_scripts_start_every_task_with_srun_and_launcher_slurm(path: str) -> None:
    script = upstream_file(path)
    assert srun_options(script) == UPSTREAM_SRUN
    assert '--launcher="slurm"' in script and 'PYTHONPATH="$(dirname $0)/..":$PYTHONPATH' in script


def test_the_smoke_runs_slurm_test_sh_s_line_without_gres(tmp_path: Path) -> None:
    from upstream_run.slurm_smoke import parse_args, test_line

    args = parse_args(["--data-root", str(tmp_path)])
    cmd = test_line(args, tmp_path / "iter_3.pth", tmp_path / "eval")
    ours = [word.split("=")[0] for word in cmd[: cmd.index(str(args.python))] if word.startswith("-")]
    assert ours == [o for o in srun_options(upstream_file("tools/slurm_test.sh")) if o != "--gres"]
    after = cmd[cmd.index(str(args.python)) + 1 :]
    assert cmd[0] == "srun" and after[:2] == ["-u", "tools/test.py"] and "--launcher=slurm" in after
