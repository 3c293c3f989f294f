"""Stack tier: long-run guarantees of the DALI training path in the real StreamPETR.

- exact resume: "N, then resume to 2N" gives every batch slot the (scene, frame), augmentation draw
  and pixels (SHA-1 of the slot's image tensor) of the loader's own uninterrupted stream (the
  straight reference, no model) at every iteration, with 1 process (--auto-resume; its first N
  iterations a real straight training run) and 2 gloo processes, shard and replicate (--resume-from);
- a checkpoint of another world size is refused, naming the field;
- validation runs the upstream evaluation hook (1 process: EvalHook, 2 processes:
  CustomDistEvalHook) and logs finite mAP/NDS, with a log line on the evaluation iteration;
- data.train.ann_file is read as given, also outside data_root.

Runs with the small (128x352) config and N=2 to keep the runs short.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
from pathlib import Path

import pytest
from stack_runs import FIRST_ITERS, assert_same_stream, reference_stream, train

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
SMALL_DALI = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"
pytestmark = [pytest.mark.stack, pytest.mark.slow]
N = 2


def test_one_process_resume_continues_the_exact_stream_and_validates(
    synthetic_dataset: Path, tmp_path: Path, dali_first_run: tuple[Path, str]
) -> None:
    """The first N iterations are the session's fresh DALI run (``dali_first_run``, conftest.py),
    continued with validation in a copy of its work dir; every slot of the 2N iterations is the one the
    loader's uninterrupted stream gives (``reference_stream``: no model, no checkpoint between)."""
    resumed = tmp_path / "resumed"
    first_run, first = dali_first_run
    assert N == FIRST_ITERS and f"auto-resume: no checkpoint in {first_run}" in first
    shutil.copytree(first_run, resumed, symlinks=True)  # latest.pth stays a link to its neighbour
    second = train(synthetic_dataset, resumed, "--iters", str(2 * N), "--auto-resume", "--validate")
    assert f"auto-resume: resuming from {resumed / f'iter_{N}.pth'}" in second  # by number
    # iter_N.pth resumes with iteration N+1: no iteration is trained (or logged) twice
    assert f"Iter [{N + 1}/{2 * N}]" in second and f"Iter [{N}/{2 * N}]" not in second, second[-3000:]
    # the run's own log: the N iterations it trained, each loss finite
    assert f"train_dali: {N} iterations" in second and "all losses finite" in second
    assert "train_dali: validation mAP" in second, second[-3000:]  # finite mAP/NDS, checked by check_run
    assert f"Iter [{2 * N}/{2 * N}]" in second, "the training line of the evaluation iteration is logged"
    lines = (resumed / "slots_rank0.jsonl").read_text().splitlines()
    assert [json.loads(line)["iter"] for line in lines] == list(range(2 * N))
    assert "DALI loader: resumed the data stream at iteration" in second

    reference = reference_stream(synthetic_dataset, tmp_path / "ref", world_size=1, mode="shard", iters=2 * N)
    assert_same_stream(resumed, reference, iters=2 * N, ranks=1)


@pytest.mark.parametrize(
    "replicate",  # `nox` runs the product's setting; `nox -s proofs` upstream's sharding too
    [
        pytest.param(False, id="sharded", marks=pytest.mark.proof),
        pytest.param(True, id="replicate_dataset_per_gpu"),
    ],
)
def test_two_gloo_processes_resume_the_exact_stream(
    synthetic_dataset: Path, tmp_path: Path, replicate: bool
) -> None:
    """N iterations on 2 processes, then --resume-from to N+1; the sharded run also validates with
    the distributed evaluation hook and shows that a 1-process resume of the checkpoint is refused."""
    run = tmp_path / "run"
    flag = ["--replicate-dataset-per-gpu"] if replicate else []
    split = f"split checked: {'replicate_dataset_per_gpu' if replicate else 'sharded'}"
    out = train(synthetic_dataset, run, "--iters", str(N), "--gpus", "2", *flag)
    assert split in out
    validate = [] if replicate else ["--validate"]
    ckpt = run / f"iter_{N}.pth"
    resume = ["--resume-from", str(ckpt), *validate]
    out = train(synthetic_dataset, run, "--iters", str(N + 1), "--gpus", "2", *flag, *resume)
    assert split in out
    if validate:
        assert "train_dali: validation mAP" in out, out[-3000:]
    mode = "replicate" if replicate else "shard"
    reference = reference_stream(synthetic_dataset, tmp_path / "ref", world_size=2, mode=mode, iters=N + 1)
    assert_same_stream(run, reference, iters=N + 1, ranks=2)

    if not replicate:
        refused = train(
            synthetic_dataset, tmp_path / "one", "--iters", str(N + 1), "--resume-from", str(ckpt), ok=False
        )
        assert "the DALI loader state holds 2 rank(s), this run has world_size 1" in refused
        assert "--gpus/--nproc_per_node 2" in refused


def test_ann_file_outside_data_root_is_read_as_given(synthetic_dataset: Path, tmp_path: Path) -> None:
    """An info file of another name, in another folder, holding one scene: the loader reads that
    file (a join of its name with data_root would find nothing), and images still come from data_root."""
    with (synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        data = pickle.load(f)
    scene = data["infos"][0]["scene_token"]
    subset = [info for info in data["infos"] if info["scene_token"] == scene]
    assert 0 < len(subset) < len(data["infos"])
    ann = tmp_path / "elsewhere" / "my_train_infos.pkl"
    ann.parent.mkdir()
    with ann.open("wb") as f:
        pickle.dump({**data, "infos": subset}, f)

    sys.path.insert(0, str(CHECKOUT))
    from dali_streampetr import build_dali_loader
    from mmcv import Config

    cfg = Config.fromfile(str(CHECKOUT / SMALL_DALI))
    cfg.data.train.data_root = f"{synthetic_dataset}/"
    cfg.data.train.ann_file = str(ann)
    cfg.data_loading_config.log_slots = False
    cfg.work_dir = str(tmp_path / "work")
    loader = build_dali_loader(cfg, "train", rank=0, world_size=1)
    assert len(loader) == len(subset)
    batch = next(loader)
    assert {m[0]["scene_token"] for m in batch["img_metas"].data[0]} == {scene}
    loader.close()
