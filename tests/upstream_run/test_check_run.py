"""The training runner's checks and command line (hermetic): a non-finite loss or a
missing iteration fails the run, the summary leaves out the warm-up, the config is pointed at the
data root. The stack tier runs them for real (tests/upstream/test_train_stack.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_run.check_run import main as check_run_main
from upstream_run.check_run import non_finite, summary
from upstream_run.train import parse_args, train_command


def _write_log(work_dir: Path, records: list[dict]) -> None:
    lines = [json.dumps({"env_info": "...", "seed": 0})] + [json.dumps(r) for r in records]
    (work_dir / "20261130_000000.log.json").write_text("\n".join(lines) + "\n")


def _record(i: int, loss: float) -> dict:
    return {
        "mode": "train",
        "iter": i,
        "time": 10.0 + i,
        "data_time": 0.1,
        "loss": loss,
        "frame_0_loss_cls": 1.0,
    }


def test_check_run_fails_on_a_non_finite_loss(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _write_log(tmp_path, [_record(1, 80.0), _record(2, float("nan"))])
    assert check_run_main([str(tmp_path), "2"]) == 1
    assert "NON-FINITE LOSS" in capsys.readouterr().err
    assert non_finite([_record(3, float("inf"))]) == ["iter 3: loss=inf"]


def test_check_run_fails_when_iterations_are_missing(tmp_path: Path) -> None:
    _write_log(tmp_path, [_record(1, 80.0)])
    assert check_run_main([str(tmp_path), "2"]) == 1


def test_summary_leaves_out_the_warm_up_iteration() -> None:
    text = summary([_record(1, 3.0), _record(2, 2.0), _record(3, 1.0)])
    assert "median 12.50 s/iter" in text and "first iteration 11.00 s" in text


def test_train_command_points_the_config_at_the_data_root(tmp_path: Path) -> None:
    args = parse_args(["--iters", "3", "--data-root", str(tmp_path), "--config", "small"])
    cmd = train_command(args)
    assert cmd[1:3] == ["tools/train.py", "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py"]
    assert "runner.max_iters=3" in cmd and "checkpoint_config.interval=3" in cmd
    assert f"data.train.ann_file={tmp_path.resolve()}/nuscenes2d_temporal_infos_train.pkl" in cmd
    assert "--no-validate" in cmd


def test_the_checkpoint_check_loads_as_mmcv_does_and_wants_classes(tmp_path: Path) -> None:
    """torch.load with torch's defaults (weights_only): CLASSES in the meta passes, none fails, and a
    pickle that would call a function outside torch's allowlist is refused."""
    import os

    torch = pytest.importorskip("torch")
    from upstream_run.check_run import check_checkpoint

    good, bare, unsafe = (tmp_path / f"{name}.pth" for name in ("good", "bare", "unsafe"))
    torch.save({"meta": {"CLASSES": ("car", "truck")}, "state_dict": {"w": torch.ones(2)}}, good)
    torch.save({"meta": {}, "state_dict": {"w": torch.ones(2)}}, bare)
    torch.save({"meta": {"CLASSES": ("car",), "hook": os.getcwd}, "state_dict": {}}, unsafe)
    assert check_checkpoint(good) == "good.pth: 1 tensors, CLASSES = car, truck"
    with pytest.raises(SystemExit, match="no meta"):
        check_checkpoint(bare)
    with pytest.raises(Exception, match="Weights only load failed"):
        check_checkpoint(unsafe)
