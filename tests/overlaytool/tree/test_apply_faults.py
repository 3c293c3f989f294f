"""`apply` killed (SIGKILL, a real process) after every write step, then rerun plainly.

The kill hook (`STREAMPETR_DALI_TEST_KILL_AT=<step>`, see scripts/overlaytool/faults.py) stops the process
right after the named step; the trace hook lists the steps of a clean run, and a test checks that
the parametrized lists below are exactly those steps. After every kill a plain `apply` (no
`--force`) must converge to the tree a clean apply makes: same files, modes, symlinks, HEAD and
`git status` and stamps (so a third run changes nothing), no journal or temporary file left.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario import configure_v1, configure_v2, observed
from tooling_repos import TRAIN_PY, Project, patched

# Writes go in path order: on a fresh tree README.md (mode), bin/run.sh, cfg.py, configs/latest.py
# (the symlink, rewritten as one), link.py, old.py (deleted: no temporary file), tools/dist_train.sh,
# tools/train.py; `:tmp` is the moment the temporary file exists but is not renamed yet.
FRESH_STEPS = [
    "mirror exiawsh+StreamPETR:lock",
    "mirror exiawsh+StreamPETR:fresh",
    "mirror exiawsh+StreamPETR:swap",
    "StreamPETR:clone:lock",
    "StreamPETR:clone",
    "StreamPETR:clone-checkout",
    "StreamPETR:checkout",
    "StreamPETR:lock",
    "StreamPETR:index",
    "StreamPETR:journal",
    *(f"StreamPETR:write-{i}{tmp}" for i in range(1, 8) for tmp in (":tmp", "") if (i, tmp) != (5, ":tmp")),
    "StreamPETR:stamp",
    "StreamPETR:exclude",
    "mirror open-mmlab+mmdetection3d:lock",
    "mirror open-mmlab+mmdetection3d:fresh",
    "mirror open-mmlab+mmdetection3d:swap",
    "mmdetection3d:clone:lock",
    "mmdetection3d:clone",
    "mmdetection3d:clone-checkout",
    "mmdetection3d:checkout",
    "mmdetection3d:lock",
    "mmdetection3d:index",
    "mmdetection3d:journal",
    "mmdetection3d:stamp",
]
# On an applied tree the series and overlay change and the pin moves: the mirror fetches the new
# pin, HEAD moves, bin/run.sh goes (no temporary file), new.py comes, old.py comes back, the
# launcher's edit is reverted (keeping +x), train.py is rewritten; mmdetection3d is up to date.
CHANGED_STEPS = [
    "mirror exiawsh+StreamPETR:lock",
    "StreamPETR:lock",
    "StreamPETR:index",
    "StreamPETR:journal",
    "StreamPETR:git-reset:started",
    "StreamPETR:head",
    *(f"StreamPETR:write-{i}{tmp}" for i in range(1, 7) for tmp in (":tmp", "") if (i, tmp) != (1, ":tmp")),
    "StreamPETR:stamp",
    "mirror open-mmlab+mmdetection3d:lock",
    "mmdetection3d:lock",
    "mmdetection3d:index",
]


def steps_of_a_clean_run(project: Project, tmp: Path) -> list[str]:
    trace = tmp / f"trace-{len(list(tmp.glob('trace-*')))}"
    assert project.call("apply", STREAMPETR_DALI_TEST_TRACE=str(trace)).returncode == 0
    return list(dict.fromkeys(trace.read_text().split("\n")[:-1]))  # each step's first occurrence


def test_the_kill_steps_are_every_write_step_of_apply(
    project: Project, tmp_path: Path, texts: dict[str, str]
) -> None:
    configure_v1(project, texts)
    assert steps_of_a_clean_run(project, tmp_path) == FRESH_STEPS
    configure_v2(project, texts)
    assert steps_of_a_clean_run(project, tmp_path) == CHANGED_STEPS


def temporary_files(project: Project) -> list[Path]:
    """The temporary files of apply's writes in the work trees (the nested checkout's included)."""
    checkout = project.checkout
    found = checkout.rglob(".*.streampetr-dali-tmp")
    return [p for p in found if ".git" not in p.relative_to(checkout).parts]


def kill_then_rerun(project: Project, step: str) -> None:
    killed = project.call("apply", STREAMPETR_DALI_TEST_KILL_AT=step)
    assert killed.returncode == -9, f"not killed at {step}: {killed.stderr}"
    assert bool(temporary_files(project)) == step.endswith(":tmp")  # killed before its rename
    rerun = project.call("apply")
    assert rerun.returncode == 0, rerun.stderr[-600:]


@pytest.mark.parametrize("step", FRESH_STEPS)
def test_kill_at_every_step_from_scratch_then_rerun_converges(
    project: Project, texts: dict[str, str], clean_fresh: dict, step: str
) -> None:
    configure_v1(project, texts)
    kill_then_rerun(project, step)
    assert observed(project) == clean_fresh


@pytest.mark.parametrize("step", CHANGED_STEPS)
def test_kill_at_every_step_then_rerun_converges(
    project: Project, texts: dict[str, str], clean_changed: dict, step: str
) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    configure_v2(project, texts)
    kill_then_rerun(project, step)
    assert observed(project) == clean_changed


@pytest.mark.parametrize("edited", ["tools/train.py", "README.md", "old.py"])
def test_user_edit_after_a_kill_is_still_refused(
    project: Project, texts: dict[str, str], edited: str, capsys
) -> None:
    """Killed half-way through writing; the user then edits a journaled file (train.py, README.md)
    or a file the run had not reached (old.py): the plain rerun refuses by name, --force recovers."""
    configure_v1(project, texts)
    assert project.run("apply") == 0
    configure_v2(project, texts)
    assert project.call("apply", STREAMPETR_DALI_TEST_KILL_AT="StreamPETR:write-2").returncode == -9
    (project.checkout / edited).write_text("my edit\n")
    capsys.readouterr()
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "local edits that apply would discard" in err and f"\n  {edited}\n" in err
    assert (project.checkout / edited).read_text() == "my edit\n"
    assert project.run("apply", "--force") == 0
    assert project.run("apply") == 0


def test_stale_private_index_lock_is_removed_under_the_lock(project: Project, texts: dict[str, str]) -> None:
    """What a kill inside `git apply --cached` leaves: series.index.lock. The rerun clears it."""
    configure_v1(project, texts)
    assert project.run("apply") == 0
    state = project.checkout / ".git" / "streampetr-dali"
    (state / "series.index.lock").write_text("")
    configure_v2(project, texts)
    assert project.run("apply") == 0
    assert not (state / "series.index.lock").exists()
    assert (project.checkout / "tools" / "train.py").read_text() == patched(TRAIN_PY, 10, "DALI v2")
