"""The rebase and `rebase --check` run one sequence of steps (`overlaytool.rebase.flow.STEPS`): a
step added to it runs in both, in its place, and a finish step that fails is a stop for both."""

from __future__ import annotations

from pathlib import Path

import pytest
from overlaytool import OverlayError
from overlaytool.rebase import flow
from rebase_scenario import move_into_src, setup_series
from tooling_repos import Project


@pytest.fixture
def moved(project: Project, tmp_path: Path) -> Project:
    """A series whose pin is behind upstream's `main`, where upstream moved `pkg/` under `src/`."""
    setup_series(project, tmp_path)
    move_into_src(project)
    return project


def test_a_step_added_to_the_sequence_runs_in_the_rebase_and_in_the_check(
    moved: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, bool, list[str]]] = []

    def audit(run: flow.Run) -> None:  # after the replay: what each ending will report on
        seen.append((run.target.checkout.name, run.go_on, sorted(run.state.statuses)))

    steps = [name for name, _ in flow.STEPS]
    at = steps.index("replay") + 1
    monkeypatch.setattr(flow, "STEPS", [*flow.STEPS[:at], ("audit", audit), *flow.STEPS[at:]])

    assert moved.run("rebase", "--check", "main") == 0
    assert moved.run("rebase", "main") == 0
    patches = sorted(p.name for p in moved.patch_dir.glob("*.patch"))
    assert [(go_on, statuses) for _, go_on, statuses in seen] == [(True, patches), (False, patches)]
    assert seen[0][0] != moved.checkout.name and seen[1][0] == moved.checkout.name  # scratch, then real


def test_a_failing_finish_step_is_a_stop_for_both(
    moved: Project, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    def refuse(run: flow.Run) -> None:
        raise OverlayError("the staged series breaks a rule\nsecond line")

    monkeypatch.setattr(flow, "STEPS", [(n, refuse if n == "check" else s) for n, s in flow.STEPS])
    assert moved.run("rebase", "--check", "main") == 1
    assert "the replayed series would not finish: the staged series breaks a rule" in capsys.readouterr().out
    assert moved.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "The rebase cannot finish: the staged series breaks a rule" in err
    assert "the rebase is still in progress" in err
