"""The rebase finish is all-or-nothing: a failed check or a kill at any step writes nothing that
`--abort` cannot undo exactly, and `--continue` completes it; a replay killed midway is redone.

The kill hook (`STREAMPETR_DALI_TEST_KILL_AT`, overlaytool/faults.py) SIGKILLs a real process
right after the named step; the trace hook lists the steps of a clean run, and a test checks that
the parametrized list is exactly the finish's steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rebase_scenario import BASE, MODEL, OURS_MODEL, move_into_src, patch_paths, project_state, setup_series
from tooling_repos import Project, commit_files, make_patch, patched

# Moving both patched files rewrites both patches, then the series (its base-commit and one entry
# fewer: upstream took the readme patch, which is deleted), then the pin.
# Each write is killed between its temporary file and the rename too (`:tmp`).
FINISH_STEPS = [
    "rebase:staged",
    "rebase:checked",
    "rebase:write-model.patch:tmp",
    "rebase:write-model.patch",
    "rebase:write-use-dali.patch:tmp",
    "rebase:write-use-dali.patch",
    "rebase:write-series:tmp",
    "rebase:write-series",
    "rebase:delete-readme.patch",
    "rebase:pin:tmp",
    "rebase:pin",
    "rebase:applied",
]

# Each patch is merged (cherry-pick), then committed.
REPLAY_STEPS = [
    f"replay:{name}:{step}" for name in ("use-dali.patch", "model.patch") for step in ("merged", "committed")
]


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    setup_series(project, tmp_path)
    project.add_patch("readme.patch", make_patch(tmp_path, BASE, {"README.md": "ours\n"}, "Readme"))
    assert project.run("apply") == 0
    (project.upstream / "README.md").write_text("ours\n")  # upstream takes the readme patch
    move_into_src(project)
    return project


def test_the_finish_steps_are_the_listed_ones(series: Project, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    assert series.call("rebase", "main", STREAMPETR_DALI_TEST_TRACE=str(trace)).returncode == 0
    steps = trace.read_text().splitlines()
    assert [s for s in steps if s.startswith("rebase:")] == FINISH_STEPS
    assert [s for s in steps if s.startswith("replay:")] == REPLAY_STEPS


def temporary_files(project: Project) -> list[Path]:
    """The temporary files of the finish's writes (patches/, the pin's folder)."""
    folders = (project.patch_dir, project.root / "upstream")
    return [p for folder in folders for p in folder.glob(".*.streampetr-dali-tmp")]


@pytest.mark.parametrize("step", FINISH_STEPS)
def test_a_kill_at_any_finish_step_is_undone_exactly_by_abort(series: Project, step: str) -> None:
    before = project_state(series)
    killed = series.call("rebase", "main", STREAMPETR_DALI_TEST_KILL_AT=step)
    assert killed.returncode == -9
    assert bool(temporary_files(series)) == step.endswith(":tmp")  # killed before its rename
    assert series.call("rebase", "--abort").returncode == 0
    assert project_state(series) == before
    assert temporary_files(series) == []
    assert not list((series.root / "upstream").glob("rebase-report.*"))
    assert series.run("apply") == 0


@pytest.mark.parametrize(
    "step", ["rebase:write-use-dali.patch:tmp", "rebase:write-use-dali.patch", "rebase:applied"]
)
def test_continue_after_a_kill_completes_the_finish(series: Project, step: str, capsys) -> None:
    assert series.call("rebase", "main", STREAMPETR_DALI_TEST_KILL_AT=step).returncode == -9
    assert series.run("rebase", "--continue") == 0
    assert "use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in capsys.readouterr().out
    assert patch_paths(series, "use-dali.patch") == ["diff --git a/src/tools/train.py b/src/tools/train.py"]
    assert patch_paths(series, "model.patch") == ["diff --git a/src/pkg/model.py b/src/pkg/model.py"]
    assert project_state(series)["rebase_state"] == []
    assert series.run("apply") == 0 and "up to date" in capsys.readouterr().out


@pytest.mark.parametrize("step", REPLAY_STEPS)
def test_a_replay_killed_midway_is_redone_by_continue(series: Project, step: str, capsys) -> None:
    """Killed between the merge and its commit, or before the state is saved: never a dropped patch."""
    assert series.call("rebase", "main", STREAMPETR_DALI_TEST_KILL_AT=step).returncode == -9
    assert series.run("rebase", "--continue") == 0
    out = capsys.readouterr().out
    assert "use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in out
    assert "model.patch: merged-3way (pkg/model.py → src/pkg/model.py)" in out
    assert patch_paths(series, "model.patch") == ["diff --git a/src/pkg/model.py b/src/pkg/model.py"]
    assert series.run("apply") == 0 and "up to date" in capsys.readouterr().out


def test_an_overlay_file_upstream_now_tracks_is_refused_before_anything_is_written(
    series: Project, capsys
) -> None:
    before = project_state(series)
    commit_files(series.upstream, {"dali/loader.py": "upstream's own loader\n"}, "Add a loader")
    assert series.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "1 overlay file(s) upstream now tracks: dali/loader.py" in err and "Nothing was written" in err
    assert project_state(series) == before  # no state, no snapshot, no report, the cache's refs as they were

    overlay = series.root / "overlay" / "dali"
    overlay.rename(overlay.with_name("dali_streampetr"))  # the fix: our loader gets its own package
    assert series.run("rebase", "main") == 0
    assert (series.checkout / "dali" / "loader.py").read_text() == "upstream's own loader\n"
    assert (series.checkout / "dali_streampetr" / "loader.py").read_text() == "LOADER = 1\n"


def test_a_failed_check_writes_nothing_and_continue_finishes_after_the_fix(series: Project, capsys) -> None:
    """An overlay file added during a stop that shadows an upstream file fails the finish's check."""
    commit_files(series.upstream, {"src/pkg/model.py": patched(MODEL, 5, "    return 0  # theirs")}, "Edit")
    before = project_state(series)
    assert series.run("rebase", "main") == 1  # model.patch conflicts
    (series.checkout / "src" / "pkg" / "model.py").write_text(OURS_MODEL)
    (series.root / "overlay" / "README.md").write_text("ours\n")  # upstream tracks README.md
    assert series.run("rebase", "--continue") == 1
    err = capsys.readouterr().err
    assert "overlay/README.md would shadow README.md, which is tracked by upstream" in err
    assert "Nothing in patches/ or the pin was written; the rebase is still in progress" in err
    assert "use-dali.patch: merged-3way" in err  # the statuses so far
    now = project_state(series)
    assert (now["patches"], now["pin"]) == (before["patches"], before["pin"])
    assert series.run("rebase", "--continue") == 1  # nothing fixed yet: refused the same way

    (series.root / "overlay" / "README.md").unlink()
    assert series.run("rebase", "--continue") == 0
    assert "report: " in capsys.readouterr().out
    assert (series.checkout / "src" / "pkg" / "model.py").read_text() == OURS_MODEL
