"""Training-log analysis of the loader stall."""

from __future__ import annotations

import json

import pytest
from loaderbench.analysis import stall

# Float checks: pytest.approx's default (relative 1e-6) on float64 results of a few operations
# on exact inputs, which are within a few eps (2.2e-16) of the decimals written here.


def write_log(path, rows):
    lines = [json.dumps({"env_info": "x", "seed": 0})]
    for i, (t, d) in enumerate(rows, 1):
        lines.append(
            json.dumps({"mode": "train", "iter": i, "lr": 1e-4, "time": t, "data_time": d, "loss": 1.0})
        )
    lines.append(json.dumps({"mode": "val", "iter": len(rows), "bbox_mAP": 0.0}))
    path.write_text("\n".join(lines) + "\n{broken\n")
    return path


def test_parse_and_summarise(tmp_path):
    log = write_log(tmp_path / "a.log.json", [(30.0, 5.0), (4.0, 0.5), (5.0, 1.0), (6.0, 1.5)])
    recs = stall.parse_log(log)
    assert [r["iter"] for r in recs] == [1, 2, 3, 4]
    s = stall.summarise_log(recs, skip=1)
    assert s["iters"] == 3 and s["skipped"] == 1
    assert s["time_s"] == pytest.approx(5.0)
    assert s["data_time_s"] == pytest.approx(1.0)
    assert s["data_share"] == pytest.approx(3.0 / 15.0)
    assert s["time_p10_s"] == pytest.approx(4.2) and s["time_p90_s"] == pytest.approx(5.8)
    assert s["data_time_p90_s"] == pytest.approx(1.4) and s["data_time_max_s"] == pytest.approx(1.5)
    assert s["data_share_p90"] == pytest.approx(0.24)  # per-iteration shares 0.125, 0.2, 0.25


def test_analyse_against_bound(tmp_path):
    (tmp_path / "t").mkdir()
    write_log(tmp_path / "t" / "20200101_000000.log.json", [(9.0, 1.0)])
    write_log(tmp_path / "t" / "20200102_000000.log.json", [(9.0, 1.0), (5.0, 0.2), (5.0, 0.2)])
    log = stall.latest_log(tmp_path / "t")
    res = stall.analyse({"train_torch": log}, bound_s=4.0)["train_torch"]
    assert res["loader_cost_s"] == pytest.approx(1.0)
    assert res["loader_cost_share"] == pytest.approx(0.2)
    text = stall.stall_table({"config": "c", "iters": 3, "bound_s": 4.0, "loaders": {"train_torch": res},
                              "missing": {"train_dali": "exit 2, no log"}})  # fmt: skip
    assert "| train_torch | 5000 (5000-5000) | 200.0 (200.0, 200.0) | 4.00% (4.00%) | 1000 | 20.0% |" in text
    assert "train_dali | not run" in text


def test_latest_log_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        stall.latest_log(tmp_path)
