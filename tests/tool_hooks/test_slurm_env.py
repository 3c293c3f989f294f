"""`--launcher slurm` without CUDA: the env:// variables derived from a task's SLURM variables
(overlay/tools/tool_hooks/slurm_env.py, called by the patched tools/train.py and tools/test.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import ModuleType

import pytest

TASK = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "4242"}


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("vm", ["vm"]),
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
        ("gpu[8-11]", ["gpu8", "gpu9", "gpu10", "gpu11"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("rack[1-2]-gpu[1,3]", ["rack1-gpu1", "rack1-gpu3", "rack2-gpu1", "rack2-gpu3"]),
        ("dgx-a100-[3]", ["dgx-a100-3"]),
    ],
)
def test_nodelist_expands_as_scontrol_prints_it(
    slurm_env: ModuleType, nodelist: str, hosts: list[str]
) -> None:
    assert slurm_env.expand_hostlist(nodelist) == hosts


@pytest.mark.parametrize("nodelist", ["node[01-04", "node]1[", "node[4-2]", "node[a-b]", "n[[1]]", ""])
def test_a_malformed_nodelist_is_refused_naming_it(slurm_env: ModuleType, nodelist: str) -> None:
    with pytest.raises(slurm_env.SlurmEnvError, match="node list"):
        slurm_env.expand_hostlist(nodelist)


def test_rank_world_size_local_rank_and_master_from_the_task_variables(slurm_env: ModuleType) -> None:
    env = slurm_env.slurm_dist_env({**TASK, "SLURM_NODELIST": "node[03-04]", "MASTER_PORT": "29511"})
    assert env == {
        "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node03", "MASTER_PORT": "29511",
    }  # fmt: skip


def test_the_step_nodelist_and_a_set_master_addr_win(slurm_env: ModuleType) -> None:
    task = {**TASK, "SLURM_NODELIST": "node[01-08]", "SLURM_STEP_NODELIST": "node[05-06]"}
    assert slurm_env.slurm_dist_env(task)["MASTER_ADDR"] == "node05"
    assert slurm_env.slurm_dist_env({**task, "MASTER_ADDR": "10.0.0.1"})["MASTER_ADDR"] == "10.0.0.1"


def test_every_task_of_a_step_agrees_on_the_port_and_steps_differ(slurm_env: ModuleType) -> None:
    step = {**TASK, "SLURM_NODELIST": "n[1-2]", "SLURM_STEP_ID": "0"}
    tasks = [{**step, "SLURM_PROCID": str(r)} for r in range(8)]
    ports = {slurm_env.slurm_dist_env(t)["MASTER_PORT"] for t in tasks}
    assert len(ports) == 1
    port = int(ports.pop())
    assert slurm_env.PORT_BASE <= port < slurm_env.PORT_BASE + slurm_env.PORT_SPAN
    next_step = slurm_env.slurm_dist_env({**tasks[0], "SLURM_STEP_ID": "1"})["MASTER_PORT"]
    next_job = slurm_env.slurm_dist_env({**tasks[0], "SLURM_JOB_ID": "4243"})["MASTER_PORT"]
    assert len({str(port), next_step, next_job}) == 3


def test_a_port_slurm_reserved_for_the_step_is_used(slurm_env: ModuleType) -> None:
    task = {**TASK, "SLURM_NODELIST": "n1", "SLURM_STEP_RESV_PORTS": "12001-12003"}
    assert slurm_env.slurm_dist_env(task)["MASTER_PORT"] == "12001"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SLURM_PROCID": None}, r"\$SLURM_PROCID is not set"),
        ({"SLURM_NTASKS": "two"}, r"\$SLURM_NTASKS='two' is not an integer"),
        ({"SLURM_PROCID": "8"}, "outside SLURM_NTASKS=8"),
        ({"SLURM_NODELIST": None}, r"\$SLURM_NODELIST is not set"),
    ],
)
def test_missing_or_bad_variables_are_named(slurm_env: ModuleType, change: dict, message: str) -> None:
    task = {**TASK, "SLURM_NODELIST": "n1", **change}
    with pytest.raises(slurm_env.SlurmEnvError, match=message):
        slurm_env.slurm_dist_env({k: v for k, v in task.items() if v is not None})


def fake_scontrol(tmp_path: Path, output: str, code: int = 0) -> str:
    """An executable that answers `scontrol show hostnames` (records its arguments)."""
    path = tmp_path / "scontrol"
    path.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\nprintf "{output}"\nexit {code}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_scontrol_is_asked_first_and_the_fallback_covers_its_failure(
    slurm_env: ModuleType, tmp_path: Path
) -> None:
    scontrol = fake_scontrol(tmp_path, "fromscontrol\\nother\\n")
    assert slurm_env.first_host("node[1-2]", scontrol) == "fromscontrol"
    assert (tmp_path / "args").read_text().split() == ["show", "hostnames", "node[1-2]"]
    broken = fake_scontrol(tmp_path, "", code=1)
    assert slurm_env.first_host("node[1-2]", broken) == "node1"


def test_export_updates_the_process_environment(
    slurm_env: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "")  # no scontrol: the pure-Python expansion
    for key, value in {**TASK, "SLURM_NODELIST": "c[7-9]", "SLURM_STEP_ID": "2"}.items():
        monkeypatch.setenv(key, value)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_NODELIST"):
        monkeypatch.setenv(key, "")  # recorded, so the values the export writes are undone after the test
        monkeypatch.delenv(key)
    derived = slurm_env.export_slurm_dist_env()
    assert {k: os.environ[k] for k in derived} == derived
    assert derived["MASTER_ADDR"] == "c7" and derived["LOCAL_RANK"] == "1"


def test_the_smoke_job_does_not_inherit_a_surrounding_rendezvous() -> None:
    from upstream_run.slurm_smoke import without_rendezvous

    inherited = {"MASTER_ADDR": "gpu01", "MASTER_PORT": "1", "RANK": "11", "WORLD_SIZE": "16"}
    env = without_rendezvous({**inherited, "PATH": "/bin", "SLURM_CONF": "slurm.conf"})
    assert env == {"PATH": "/bin", "SLURM_CONF": "slurm.conf"}
