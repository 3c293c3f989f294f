"""`apply --force` killed (SIGKILL) after every step converges on a rerun."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario import configure_v1, edit_by_hand, observed
from tooling_repos import Project

# What `apply --force` goes through on an applied tree with hand edits, a deleted overlay file
# and a commit made by hand on top of the pin.
FORCE_STEPS = [
    "mirror exiawsh+StreamPETR:lock",
    "StreamPETR:lock",
    "StreamPETR:index",
    "StreamPETR:journal",
    "StreamPETR:git-reset:started",
    "StreamPETR:head",
    "StreamPETR:write-1:tmp",
    "StreamPETR:write-1",
    "StreamPETR:write-2",
    "StreamPETR:write-3:tmp",
    "StreamPETR:write-3",
    "StreamPETR:stamp",
    "mirror open-mmlab+mmdetection3d:lock",
    "mmdetection3d:lock",
    "mmdetection3d:index",
]


def test_the_kill_steps_are_every_step_of_apply_force(project: Project, texts, tmp_path: Path) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    edit_by_hand(project)
    trace = tmp_path / "trace"
    assert project.call("apply", "--force", STREAMPETR_DALI_TEST_TRACE=str(trace)).returncode == 0
    assert list(dict.fromkeys(trace.read_text().split("\n")[:-1])) == FORCE_STEPS


@pytest.mark.parametrize("step", FORCE_STEPS)
def test_apply_force_killed_at_every_step_converges_on_a_rerun(
    project: Project, texts, clean_fresh: dict, step: str
) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    edit_by_hand(project)
    killed = project.call("apply", "--force", STREAMPETR_DALI_TEST_KILL_AT=step)
    assert killed.returncode == -9, f"not killed at {step}: {killed.stderr}"
    rerun = project.call("apply", "--force")
    assert rerun.returncode == 0, rerun.stderr[-600:]
    assert observed(project) == clean_fresh
    assert project.call("apply").returncode == 0  # and a plain apply finds nothing to do
    assert observed(project) == clean_fresh
