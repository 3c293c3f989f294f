"""A real single-node SLURM (scripts/slurm_local): it starts, srun's tasks initialise gloo through
overlay/tools/tool_hooks/slurm_env.py, scontrol expands node lists as the fallback does, and every daemon is
gone afterwards, also when the body failed. Skips with one line when SLURM cannot be started here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from slurm_local.cluster import LocalSlurm
from slurm_local.programs import why_not_startable

REPO_ROOT = Path(__file__).resolve().parents[2]
REASON = why_not_startable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no local SLURM: {REASON}")

TASK = """
import sys, torch, torch.distributed as dist
sys.path.insert(0, sys.argv[1])
from tool_hooks import export_slurm_dist_env  # the face, as the patched tools import it
env = export_slurm_dist_env()
dist.init_process_group(backend="gloo")
total = torch.tensor([dist.get_rank() + 1])
dist.all_reduce(total)
print(f"rank={dist.get_rank()} world={dist.get_world_size()} local={env['LOCAL_RANK']} "
      f"addr={env['MASTER_ADDR']} port={env['MASTER_PORT']} sum={int(total)}", flush=True)
dist.destroy_process_group()
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not running
        return f.read().split(") ")[-1][0] != "Z"


def test_srun_tasks_form_a_gloo_group_from_slurm_variables_and_the_daemons_stop(
    slurm_env: ModuleType,
) -> None:
    with LocalSlurm() as slurm:
        pids = [p.pid for p in slurm._popen.values()]
        state = slurm.state
        tools = str(REPO_ROOT / "overlay" / "tools")
        done = slurm.run(
            "srun", "-p", "cpu", "-n2", "--kill-on-bad-exit=1", sys.executable, "-c", TASK, tools
        )
        lines = sorted(done.stdout.splitlines())
        assert [line.split()[:3] for line in lines] == [
            ["rank=0", "world=2", "local=0"], ["rank=1", "world=2", "local=1"],
        ], done.stdout + done.stderr  # fmt: skip
        assert all("sum=3" in line for line in lines)  # 1 + 2: both ranks took part
        assert len({" ".join(line.split()[3:5]) for line in lines}) == 1  # one master address and port
        for nodelist in ("node[01-04,07]", "a,b[1-2],c", "rack[1-2]-gpu[1,3]", "n[098-101]"):
            real = slurm.run("scontrol", "show", "hostnames", nodelist).stdout.split()
            assert real == slurm_env.expand_hostlist(nodelist), nodelist
    assert not any(alive(pid) for pid in pids) and not state.exists()


def test_a_failing_body_still_stops_every_daemon() -> None:
    pids, state = [], None
    with pytest.raises(subprocess.CalledProcessError), LocalSlurm() as slurm:
        pids = [p.pid for p in slurm._popen.values()]
        state = slurm.state
        subprocess.run(["srun", "-p", "cpu", "-n1", "false"], env=slurm.env, check=True, capture_output=True)
    assert len(pids) == 3 and not any(alive(pid) for pid in pids)
    assert state is not None and not state.exists()
