"""The A/B loss comparison of two runs: per-loss largest relative difference and the chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_run.loss_ab import main


def write_log(work_dir: Path, losses: list[tuple[float, float]]) -> None:
    """An mmcv TextLoggerHook json log: env line, then one train record per iteration."""
    work_dir.mkdir()
    lines = [{"env_info": "x", "seed": 0}]
    lines += [
        {"mode": "train", "epoch": 1, "iter": i, "lr": 1e-4, "time": 1.0, "data_time": 0.1,
         "loss_cls": cls, "loss": total}
        for i, (cls, total) in enumerate(losses, start=1)
    ]  # fmt: skip
    (work_dir / "20260101_000000.log.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_largest_relative_difference_per_loss_and_chart(tmp_path, capsys):
    write_log(tmp_path / "a", [(2.0, 10.0), (1.5, 8.0), (1.0, 6.0)])
    write_log(tmp_path / "b", [(2.0, 10.0), (1.2, 8.0), (1.0, 5.0)])
    png = tmp_path / "ab.png"
    assert main([f"exact={tmp_path / 'a'}", f"fast={tmp_path / 'b'}", "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "loss_cls: largest relative difference 0.2000 at iteration 2" in out  # 0.3 / 1.5
    assert "loss: largest relative difference 0.1667 at iteration 3" in out  # 1 / 6
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runs_without_a_common_iteration_are_refused(tmp_path):
    write_log(tmp_path / "a", [(2.0, 10.0)])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.log.json").write_text(json.dumps({"mode": "train", "iter": 7, "loss": 1.0}) + "\n")
    with pytest.raises(SystemExit, match="no loss at a common iteration"):
        main([f"exact={tmp_path / 'a'}", f"fast={tmp_path / 'b'}"])
