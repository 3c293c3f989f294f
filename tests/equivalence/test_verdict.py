"""The last line of ``nox -s equivalence``: a config refused by name is counted as refused, never
as equal, and a differing one is counted apart (the run's PASS/FAIL stays ``all(ok)``)."""

from __future__ import annotations

from equivalence.report import verdict_counts


def test_refused_and_different_configs_are_not_counted_as_equal() -> None:
    records = [
        {"config": "a.py", "ok": True},
        {"config": "b.py", "ok": True, "refused": "data.train.use_valid_flag=False ..."},
        {"config": "c.py", "ok": False},
    ]
    assert verdict_counts(records) == "1 of 3 configs equal, 1 refused by name (b.py), 1 different"


def test_all_equal_says_so_without_a_refusal_clause() -> None:
    assert verdict_counts([{"config": "a.py", "ok": True}] * 2) == "2 of 2 configs equal"
