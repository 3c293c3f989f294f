"""`evaluate` and `create_data` without the stack (hermetic, stdlib only): the command lines they build,
the config they pick, the metrics table they print and the errors on bad input. The stack tier
(test_workflow_stack.py, tests/synthdata/test_infos_converter_stack.py) runs them for real.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from upstream_run import create_data, evaluate

SUMMARY = {
    "mean_ap": 0.0123,
    "nd_score": 0.0456,
    "tp_errors": {"trans_err": 1.0, "scale_err": 0.9, "orient_err": 1.2, "vel_err": 1.5, "attr_err": 1.0},
    "mean_dist_aps": {"car": 0.05, "traffic_cone": 0.0},
    "label_tp_errors": {
        "car": {"trans_err": 0.8, "scale_err": 0.3, "orient_err": 1.1, "vel_err": 1.4, "attr_err": 0.9},
        "traffic_cone": {
            "trans_err": 1.0,
            "scale_err": 1.0,
            "orient_err": math.nan,
            "vel_err": math.nan,
            "attr_err": math.nan,
        },  # fmt: skip
    },
}


def test_metrics_table_has_map_nds_and_one_row_per_class() -> None:
    lines = evaluate.format_metrics(SUMMARY).splitlines()
    assert lines[:2] == ["mAP: 0.0123", "NDS: 0.0456"]
    assert "mATE: 1.0000" in lines
    header = lines.index(next(line for line in lines if line.startswith("Object Class")))
    assert lines[header].split() == ["Object", "Class", "AP", "ATE", "ASE", "AOE", "AVE", "AAE"]
    assert lines[header + 1].split() == ["car", "0.0500", "0.8000", "0.3000", "1.1000", "1.4000", "0.9000"]
    assert lines[header + 2].split() == ["traffic_cone", "0.0000", "1.0000", "1.0000", "nan", "nan", "nan"]


def _ckpt_dir(tmp_path: Path) -> Path:
    """A work dir as tools/train.py leaves it: two dumped configs (the dir was reused), then a checkpoint."""
    work = tmp_path / "work"
    work.mkdir()
    for i, name in enumerate(("old_config.py", "this_run.py", "iter_1.pth", "later_run.py")):
        (work / name).write_text("")
        os.utime(work / name, (1000 + i, 1000 + i))
    return work


def test_default_config_is_the_one_dumped_last_before_the_checkpoint(tmp_path: Path) -> None:
    work = _ckpt_dir(tmp_path)
    assert evaluate.default_config(work / "iter_1.pth") == work / "this_run.py"
    (work / "this_run.py").unlink()
    (work / "old_config.py").unlink()
    with pytest.raises(evaluate.EvaluateError, match="no config that tools/train.py dumped.*--config"):
        evaluate.default_config(work / "iter_1.pth")


def test_a_relative_checkpoint_is_taken_from_where_the_user_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tools/test.py runs in the checkout: a path given from the repo root must reach it whole."""
    work = _ckpt_dir(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = evaluate.parse_args(["work/iter_1.pth", "--data-root", "d"])
    assert args.checkpoint == work / "iter_1.pth"
    assert evaluate.default_config(args.checkpoint) == work / "this_run.py"  # absolute, as test.py needs
    assert args.out == work / "eval"


def test_unknown_config_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(evaluate.EvaluateError, match="--config nosuch: no such config"):
        evaluate.resolve_config("nosuch", tmp_path / "iter_1.pth", tmp_path)


def test_one_cpu_process_runs_test_py_directly_with_the_data_and_json_location(tmp_path: Path) -> None:
    args = evaluate.parse_args([str(tmp_path / "w" / "iter_2.pth"), "--data-root", str(tmp_path / "d")])
    cmd = evaluate.test_command(args, tmp_path / "cfg.py", on_gpu=False)
    assert cmd[1:6] == [
        "tools/test.py",
        str(tmp_path / "cfg.py"),
        str(tmp_path / "w" / "iter_2.pth"),
        "--eval",
        "bbox",
    ]
    assert f"data.test.data_root={tmp_path / 'd'}/" in cmd
    assert f"data.test.ann_file={tmp_path / 'd' / evaluate.VAL_INFOS}" in cmd
    assert cmd[-2:] == ["--eval-options", f"jsonfile_prefix={tmp_path / 'w' / 'eval'}"]
    assert "--launcher" not in cmd


@pytest.mark.parametrize(("gpus", "on_gpu"), [(2, False), (1, True)])
def test_several_processes_or_a_gpu_go_through_torchrun(tmp_path: Path, gpus: int, on_gpu: bool) -> None:
    args = evaluate.parse_args(
        [
            str(tmp_path / "c.pth"),
            "--data-root",
            str(tmp_path),
            "--gpus",
            str(gpus),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    cmd = evaluate.test_command(args, tmp_path / "cfg.py", on_gpu=on_gpu)
    assert cmd[1:4] == ["-m", "torch.distributed.run", f"--nproc_per_node={gpus}"]
    assert cmd[-4:] == ["--launcher", "pytorch", "--tmpdir", str(tmp_path / "o" / ".collect")]


@pytest.mark.parametrize("sharding", ["scenes", "upstream"])
def test_sharding_reaches_test_py_as_the_config_key_and_the_ranks_lines_are_read(
    tmp_path: Path, sharding: str
) -> None:
    args = evaluate.parse_args(
        [str(tmp_path / "c.pth"), "--data-root", str(tmp_path), "--sharding", sharding]
    )
    cmd = evaluate.test_command(args, tmp_path / "cfg.py", on_gpu=False)
    assert f"data_loading_config.test_sharding={sharding}" in cmd
    printed = "rank 0 of 2 (test_sharding=scenes): 4 of 4 frames, 0..3\n"
    printed += "rank 1 of 2 (test_sharding=scenes): 0 of 4 frames\n"
    assert evaluate.SHARDING_LINE.findall(printed) == ["scenes", "scenes"]


def test_evaluate_names_a_missing_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert evaluate.main([str(tmp_path / "nope.pth"), "--data-root", str(tmp_path)]) == 1
    assert f"{tmp_path / 'nope.pth'}: no such checkpoint" in capsys.readouterr().err


def test_create_data_writes_absolute_prefixed_pickles_into_out(tmp_path: Path) -> None:
    args = create_data.parse_args(["--root", str(tmp_path / "nus"), "--version", "v1.0-mini", "--out", "rel"])
    cmd = create_data.converter_command(args)
    assert cmd[1] == "-c" and "create_data_nusc.nuscenes_data_prep(" in cmd[2]
    assert cmd[3:] == [str(tmp_path / "nus"), str(Path("rel").resolve() / "nuscenes2d"), "v1.0-mini", "10"]
    assert [p.name for p in create_data.outputs(args.out, "v1.0-trainval")] == [
        "nuscenes2d_temporal_infos_train.pkl",
        "nuscenes2d_temporal_infos_val.pkl",
    ]
    assert [p.name for p in create_data.outputs(args.out, "v1.0-test")] == [
        "nuscenes2d_temporal_infos_test.pkl"
    ]


def test_create_data_names_the_missing_tables(tmp_path: Path) -> None:
    (tmp_path / "v1.0-mini").mkdir()
    (tmp_path / "v1.0-mini" / "scene.json").write_text("[]")
    create_data.check_root(tmp_path, "v1.0-mini")
    with pytest.raises(
        create_data.CreateDataError, match=r"v1.0-trainval: no nuScenes tables.*found: v1.0-mini"
    ):
        create_data.check_root(tmp_path, "v1.0-trainval")
