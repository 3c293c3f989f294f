"""The slot-split check behind `train_dali --gpus K`: sharded ranks never share a frame in an
iteration; with `replicate_dataset_per_gpu` every rank receives rank 0's stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_run.slots import main, problems, read_logs


def write_logs(work_dir: Path, per_rank: dict[int, list[list[int]]]) -> dict[int, list[dict]]:
    """``per_rank``: rank -> per iteration, the data set index of every batch slot."""
    for rank, iterations in per_rank.items():
        lines = [
            {"iter": it, "rank": rank, "slots": [{"index": i, "scene": f"scene{i // 8}"} for i in slots]}
            for it, slots in enumerate(iterations)
        ]
        (work_dir / f"slots_rank{rank}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return read_logs(work_dir)


def test_sharded_ranks_must_not_share_a_frame(tmp_path: Path) -> None:
    disjoint = write_logs(tmp_path, {0: [[0, 8], [1, 9]], 1: [[16, 24], [17, 25]]})
    assert problems(disjoint, replicate_dataset_per_gpu=False) == []
    assert problems(disjoint, replicate_dataset_per_gpu=True) == ["rank 1 stream differs from rank 0"]
    clash = write_logs(tmp_path, {0: [[0, 8], [1, 9]], 1: [[16, 24], [17, 9]]})
    assert problems(clash, replicate_dataset_per_gpu=False) == [
        "iteration 1: two slots of the global batch got the same frame [1, 9, 17, 9]"
    ]


def test_replicated_ranks_must_receive_the_same_stream(tmp_path: Path, capsys) -> None:
    write_logs(tmp_path, {0: [[0, 8], [1, 9]], 1: [[0, 8], [1, 9]]})
    assert main([str(tmp_path), "--replicate-dataset-per-gpu"]) == 0
    assert "2 rank(s), split checked: replicate_dataset_per_gpu" in capsys.readouterr().out
    assert main([str(tmp_path)]) == 1  # the same logs are not a sharded split
    assert "slot split is not sharded" in capsys.readouterr().err


@pytest.mark.parametrize("replicate", [False, True])
def test_no_logs_is_a_problem(tmp_path: Path, replicate: bool) -> None:
    assert problems(read_logs(tmp_path), replicate) == [
        "no slots_rank*.jsonl written (is data_loading_config.log_slots on?)"
    ]
