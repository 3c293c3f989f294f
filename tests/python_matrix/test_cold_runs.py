"""The per-Python cold runs of `nox -s pythons` (``python_matrix.cold_runs``): what a run reads back
and what it refuses before it clones anything (the runs themselves take about 10 min a Python)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from interpreter import BasePython
from interpreter.choice import DISTRIBUTION
from python_matrix import cold_runs


def test_the_first_losses_are_the_training_entries_of_the_clones_logs(tmp_path: Path) -> None:
    logs = tmp_path / "work_dirs" / "train_dali"
    logs.mkdir(parents=True)
    entries = [{"env_info": "..."}, {"mode": "train", "loss": 0.771023}, {"mode": "val", "loss": 9.0},
               {"mode": "train", "iter": 2}, {"mode": "train", "loss": 83.975781}]  # fmt: skip
    (logs / "20261206_000000.log.json").write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert cold_runs._first_losses(tmp_path) == [0.77102, 83.97578]
    assert cold_runs._first_losses(tmp_path / "no-clone") == []


def test_a_python_this_host_lacks_is_refused_before_any_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    system = BasePython(str(DISTRIBUTION), (3, 11, 2))
    assert (system.label, BasePython("/opt/python3.12", (3, 12, 1)).label) == ("system", "3.12")
    monkeypatch.setattr(cold_runs, "other_pythons", lambda here: [system])  # no probe of this host
    monkeypatch.setattr(cold_runs, "run_one", lambda *a: pytest.fail("cloned for a refused run"))
    out = tmp_path / "pythons"
    assert cold_runs.main(["--minors", "system,2.7", "--out", str(out)]) == 2
    assert "no interpreter for 2.7 on this host (" in capsys.readouterr().err  # system was found
    assert not out.exists()
