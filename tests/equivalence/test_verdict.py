"""The last line of ``nox -s equivalence``: a config refused by name is counted as refused, never
as equal, and a differing one is counted apart (the run's PASS/FAIL stays ``all(ok)``)."""

from __future__ import annotations

from equivalence.verdict import config_table, result_of, verdict, verdict_counts


def test_refused_and_different_configs_are_not_counted_as_equal() -> None:
    records = [
        {"config": "a.py", "ok": True},
        {"config": "b.py", "ok": True, "refused": "data.train.use_valid_flag=False ..."},
        {"config": "c.py", "ok": False},
    ]
    assert verdict_counts(records) == "1 of 3 configs equal, 1 refused by name (b.py), 1 different"


def test_all_equal_says_so_without_a_refusal_clause() -> None:
    assert verdict_counts([{"config": "a.py", "ok": True}] * 2) == "2 of 2 configs equal"


def test_not_comparable_and_skipped_rows_are_counted_apart_and_tabled() -> None:
    error = {"type": "KeyError", "message": "'instance_inds'", "where": "fork.py:13", "hint": "x|y"}
    records = [
        {"config": "a.py", "mode": "streaming", "ok": True},
        {
            "config": "b.py",
            "mode": "-",
            "skipped": "no `_base_`, `data` or `model`: not a config",
            "ok": True,
        },
        {"config": "c.py", "mode": "streaming", "ok": False, "not_comparable": error},
    ]
    assert verdict_counts(records) == (
        "1 of 2 configs equal, 1 not comparable (c.py); 1 file(s) skipped by rule (b.py)"
    )
    assert result_of(records[2]) == "not comparable: KeyError: 'instance_inds' (fork.py:13); x|y"
    table = config_table(records).splitlines()
    assert table[3] == "| b.py | - | skipped: no `_base_`, `data` or `model`: not a config |"
    assert table[4] == "| c.py | streaming | not comparable: KeyError: 'instance_inds' (fork.py:13); x\\|y |"


def test_the_run_says_fail_only_when_a_row_differs() -> None:
    """Only not-comparable rows beside equal ones: no row is FAIL, so the run does not say FAIL."""
    error = {"type": "FileNotFoundError", "message": "configs/_base_/x.py", "where": "fork.py:1"}
    equal, broken = {"config": "a.py", "ok": True}, {"config": "b.py", "ok": False, "not_comparable": error}
    assert verdict([equal, {"config": "r.py", "ok": True, "refused": "why"}]) == "PASS"
    assert verdict([equal, broken]) == "NOT ALL COMPARABLE"
    assert verdict([equal, broken, {"config": "c.py", "ok": False}]) == "FAIL"
