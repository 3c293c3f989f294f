"""The training runner's long-run flags, its evaluation check and the slot-log merge of resumed runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_run.check_run import evaluation
from upstream_run.slots import SlotLogError, differences, merge_segments, read_logs
from upstream_run.train import parse_args, train_command


def test_validate_evaluates_at_the_end_unless_an_interval_is_given(tmp_path: Path) -> None:
    cmd = train_command(parse_args(["--iters", "4", "--data-root", str(tmp_path), "--validate"]))
    assert "--no-validate" not in cmd and "evaluation.interval=4" in cmd
    assert f"data.val.ann_file={tmp_path.resolve()}/nuscenes2d_temporal_infos_val.pkl" in cmd
    cmd = train_command(
        parse_args(["--iters", "4", "--data-root", str(tmp_path), "--validate", "--eval-interval", "2"])
    )
    assert "evaluation.interval=2" in cmd


def test_resume_flags_reach_tools_train(tmp_path: Path) -> None:
    ckpt = tmp_path / "iter_2.pth"
    cmd = train_command(parse_args(["--data-root", str(tmp_path), "--resume-from", str(ckpt)]))
    assert cmd[cmd.index("--resume-from") + 1] == str(ckpt.resolve()) and "--auto-resume" not in cmd
    cmd = train_command(parse_args(["--data-root", str(tmp_path), "--auto-resume", "--gpus", "2"]))
    assert "--auto-resume" in cmd and cmd[-2:] == ["--launcher", "pytorch"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--eval-interval", "2"],  # without --validate
        ["--resume-from", "x.pth", "--auto-resume"],
    ],
)
def test_contradicting_flags_are_refused(tmp_path: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--data-root", str(tmp_path), *argv])


def test_evaluation_reads_the_last_logged_map_and_nds() -> None:
    records = [
        {"mode": "train", "iter": 4, "loss": 1.0},
        {"mode": "val", "iter": 4, "pts_bbox_NuScenes/mAP": 0.0, "pts_bbox_NuScenes/NDS": 0.01},
    ]
    assert evaluation(records) == {"mAP": 0.0, "NDS": 0.01}
    assert evaluation(records[:1]) == {}


def _record(i: int, index: int) -> dict:
    return {
        "iter": i,
        "rank": 0,
        "slots": [{"scene": "s", "token": f"t{index}", "index": index, "draw": {"flip": True}}],
    }


def test_segments_merge_and_a_repeated_iteration_must_be_identical() -> None:
    # a resume may log the checkpoint's iteration again: identical is fine, different is an error
    merged = merge_segments([_record(0, 5), _record(1, 6), _record(1, 6), _record(2, 7)], Path("log"))
    assert [r["iter"] for r in merged] == [0, 1, 2]
    with pytest.raises(SlotLogError, match="iteration 1 was logged twice with different slots"):
        merge_segments([_record(0, 5), _record(1, 6), _record(1, 9)], Path("log"))
    with pytest.raises(SlotLogError, match=r"missing from the slot log: \[1\]"):
        merge_segments([_record(0, 5), _record(2, 7)], Path("log"))


def test_differences_name_rank_iteration_slot_and_field(tmp_path: Path) -> None:
    for name, records in {"a": [_record(0, 5), _record(1, 6)], "b": [_record(0, 5), _record(1, 8)]}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "slots_rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    a, b = read_logs(tmp_path / "a"), read_logs(tmp_path / "b")
    assert differences(a, a) == []
    assert differences(a, b) == ["rank 0 iteration 1 slot 0: token t6 vs t8"]
