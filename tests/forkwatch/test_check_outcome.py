"""Reading a `rebase --check`: from today's report (names + status maps), from a report with the
per-patch `provisional` flags, `would_stop` and `target_commit`, and from the printed status lines
when there is no report; a report that is no report is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forkwatch import ForkwatchError
from forkwatch.check_outcome import CARRIES_OVER, ERROR, STOPS, outcome_of

NEW = "b" * 40
PRINTED = f"""rebase --check StreamPETR: {"a" * 12} → {NEW[:12]}
  use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)
  model.patch: missing-at-target
  late.patch: clean (provisional)
the series would not carry over: resolve or --skip in a real rebase
error: the series would not carry over to main (nothing was changed)
"""


def report(tmp: Path, **fields: object) -> Path:
    base = {"old": "a" * 40, "new": NEW, "patches": ["use-dali.patch", "model.patch", "late.patch"]}
    base["statuses"] = {
        "use-dali.patch": "merged-3way",
        "model.patch": "missing-at-target",
        "late.patch": "clean",
    }
    base["moves"] = {"use-dali.patch": ["tools/train.py → src/tools/train.py"]}
    path = tmp / "rebase-report.json"
    path.write_text(json.dumps({**base, **fields}))
    return path


def statuses(outcome) -> list[tuple[str, str, bool]]:
    return [(p.name, p.status, p.provisional) for p in outcome.patches]


def test_the_printed_lines_without_a_report(tmp_path: Path) -> None:
    outcome = outcome_of(1, PRINTED, tmp_path / "absent.json")
    assert outcome.state == STOPS and outcome.target_commit == NEW[:12]
    assert statuses(outcome) == [
        ("use-dali.patch", "merged-3way", False),
        ("model.patch", "missing-at-target", False),
        ("late.patch", "clean", True),
    ]
    assert outcome.patches[0].moves == ["tools/train.py → src/tools/train.py"]
    assert outcome.would_stop == {"kind": "missing-at-target", "patch": "model.patch", "paths": []}


def test_the_lines_rebase_check_prints_past_a_stop(tmp_path: Path) -> None:
    """The status lines as overlaytool prints them (its own `status_lines`): moves, a stop, statuses
    past it marked provisional, one that may be an artefact of the patch left out, one independent."""
    from overlaytool.rebase.report import status_lines
    from overlaytool.rebase.state import RebaseState, Stop

    names = ["use-dali.patch", "model.patch", "late.patch", "other.patch"]
    state = RebaseState(
        "a" * 40, NEW, names, next=1, first_stop=Stop("conflict", ["b.py"], patch="model.patch")
    )
    state.statuses = dict(zip(names, ["merged-3way", "conflict", "conflict", "clean"], strict=True))
    state.moves = {"use-dali.patch": ["a.py → src/a.py", "b.py → src/b.py"]}
    state.provisional, state.shared = (
        ["late.patch", "other.patch"],
        {"late.patch": ["b.py"], "other.patch": []},
    )
    printed = "\n".join(
        [f"rebase --check StreamPETR: {'a' * 12} → {NEW[:12]}", *status_lines(state), "error: x"]
    )
    outcome = outcome_of(1, printed, tmp_path / "absent.json")
    assert [(p.name, p.status, p.provisional, p.may_be_artefact) for p in outcome.patches] == [
        ("use-dali.patch", "merged-3way", False, False),
        ("model.patch", "conflict", False, False),
        ("late.patch", "conflict", True, True),
        ("other.patch", "clean", True, False),
    ], printed
    assert outcome.patches[0].moves == ["a.py → src/a.py", "b.py → src/b.py"]
    assert outcome.would_stop == {"kind": "conflict", "patch": "model.patch", "paths": []}


def test_a_report_says_which_provisional_stop_may_be_an_artefact(tmp_path: Path) -> None:
    entries = [
        {"name": "model.patch", "status": "conflict", "provisional": False},
        {"name": "late.patch", "status": "conflict", "provisional": True, "may_be_artefact": True},
        {"name": "other.patch", "status": "conflict", "provisional": True, "may_be_artefact": False},
    ]
    outcome = outcome_of(1, "", report(tmp_path, format=2, patch_entries=entries))
    assert [p.may_be_artefact for p in outcome.patches] == [False, True, False]


def test_todays_report_and_the_finish_check_message(tmp_path: Path) -> None:
    path = report(
        tmp_path, statuses={"use-dali.patch": "clean", "model.patch": "offset", "late.patch": "clean"}
    )
    out = (
        "rebase --check StreamPETR: aaaa → bbbb\nthe replayed series would not finish: overlay shadows x.py\n"
    )
    outcome = outcome_of(1, out, path)
    assert outcome.target_commit == NEW and outcome.state == STOPS
    assert outcome.would_stop == {
        "kind": "finish-check",
        "patch": None,
        "paths": [],
        "message": "overlay shadows x.py",
    }
    assert outcome_of(0, "", path).state == CARRIES_OVER and outcome_of(0, "", path).would_stop is None


@pytest.mark.parametrize(
    "provisional", [["late.patch"], {"late.patch": True, "model.patch": False}], ids=["list", "map"]
)
def test_a_report_with_the_new_fields(tmp_path: Path, provisional: object) -> None:
    stop = {"kind": "overlapping-targets", "patch": None, "paths": ["mmdetection3d/setup.py"]}
    path = report(tmp_path, provisional=provisional, would_stop=stop, target_commit="c" * 40, source="u")
    outcome = outcome_of(1, "", path)
    assert outcome.target_commit == "c" * 40
    assert outcome.would_stop == stop, "the report's own would_stop wins over one derived from statuses"
    assert [p.provisional for p in outcome.patches] == [False, False, True]
    carried = outcome_of(0, "", report(tmp_path, would_stop=None))
    assert carried.would_stop is None and carried.state == CARRIES_OVER


def test_per_patch_entries_in_a_report(tmp_path: Path) -> None:
    entries = [
        {"name": "a.patch", "status": "clean"},
        {"name": "b.patch", "status": "conflict", "provisional": True},
    ]
    outcome = outcome_of(1, "", report(tmp_path, patches=entries, statuses={}))
    assert statuses(outcome) == [("a.patch", "clean", False), ("b.patch", "conflict", True)]
    assert outcome.would_stop == {"kind": "conflict", "patch": "b.patch", "paths": []}


def test_a_format_2_report_with_patch_entries(tmp_path: Path) -> None:
    """The fields of the rebase report's format 2: `patch_entries`, `would_stop` with a message."""
    entries = [
        {"name": "use-dali.patch", "status": "clean", "moves": [], "provisional": False},
        {"name": "model.patch", "status": "conflict", "moves": ["a.py → b.py"], "provisional": False},
        {"name": "late.patch", "status": "offset", "moves": [], "provisional": True},
        {"name": "never.patch", "status": None, "moves": [], "provisional": True},
    ]
    stop = {"kind": "conflict", "patch": "model.patch", "paths": ["b.py"], "message": "conflicts in b.py"}
    path = report(tmp_path, format=2, mode="check", patch_entries=entries, would_stop=stop, target_commit=NEW)
    outcome = outcome_of(1, "", path)
    assert statuses(outcome) == [
        ("use-dali.patch", "clean", False),
        ("model.patch", "conflict", False),
        ("late.patch", "offset", True),
        ("never.patch", "pending", True),
    ]
    assert outcome.patches[1].moves == ["a.py → b.py"] and outcome.would_stop == stop


def test_a_check_that_never_reached_the_replay_is_an_error(tmp_path: Path) -> None:
    outcome = outcome_of(
        1, "error: the cache lacks StreamPETR\nNext: nox -s fetch\n", tmp_path / "absent.json"
    )
    assert outcome.state == ERROR and outcome.patches == [] and "nox -s fetch" in outcome.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a readable rebase report"),
        ('{"old": 1}', "not a rebase report"),
        ("[]", "not a rebase report"),
    ],
)
def test_a_damaged_report_is_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rebase-report.json"
    path.write_text(text)
    with pytest.raises(ForkwatchError, match=message) as err:
        outcome_of(1, PRINTED, path)
    assert str(path) in str(err.value)


def test_a_would_stop_that_is_no_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ForkwatchError, match="would_stop is neither null nor a table"):
        outcome_of(1, "", report(tmp_path, would_stop="conflict"))
