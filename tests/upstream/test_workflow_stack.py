"""Stack tier: the real-data recipe of docs/training.md on a CPU host, kept short for CI.

One training run serves every test: upstream's `tools/dist_train.sh` with 2 CPU processes (gloo) and
the small DALI config, 1 iteration. `nox -s evaluate`'s runner then evaluates its checkpoint with
tools/test.py (the CPU path patched in), in one process and in three gloo processes (two: a proof),
picking the config train.py dumped beside the checkpoint, and must print finite mAP/NDS from
nuscenes-devkit with a result for every val sample, the three ranks' results and metrics one
process's; the config is a DALI one, so tools/test.py reads
the frames through the DALI test loader, and `--loader torch` gives the same predictions (3 ranks: the
val scene on one). Each evaluation runs once and every test that needs it reads it (``evaluations``).
A `tools/dist_test.sh` whose ranks are SIGKILLed leaves no process behind.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stack_runs import REPO_ROOT
from upstream_run.train import free_port

pytestmark = [pytest.mark.stack, pytest.mark.slow]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"


@pytest.fixture(scope="module")
def dist_trained(tmp_path_factory: pytest.TempPathFactory, synthetic_dataset: Path) -> tuple[Path, str]:
    """Work dir and output of `tools/dist_train.sh <small DALI config> 2` (1 iteration, CPU, gloo)."""
    work = tmp_path_factory.mktemp("dist_train")
    data = synthetic_dataset
    options = [
        "runner.max_iters=1",
        "checkpoint_config.interval=1",
        f"data.train.data_root={data}/",
        f"data.train.ann_file={data}/nuscenes2d_temporal_infos_train.pkl",
        "data_loading_config.log_slots=True",
    ]
    cmd = ["bash", "tools/dist_train.sh", CONFIG, "2", "--work-dir", str(work), "--no-validate"]
    cmd += ["--cfg-options", *options]
    # As docs/training.md says: the env's python first on PATH (the script calls `python`), a free port.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "PORT": str(free_port())}
    proc = subprocess.run(cmd, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=1200)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return work, output


def test_dist_train_sh_runs_two_cpu_processes(dist_trained: tuple[Path, str]) -> None:
    work, output = dist_trained
    assert "Iter [1/1]" in output, output[-3000:]
    assert (work / "iter_1.pth").is_file() and (work / Path(CONFIG).name).is_file()
    for rank in (0, 1):  # each rank's DALI loader logged the (scene, frame) of its batch slot
        lines = (work / f"slots_rank{rank}.jsonl").read_text().splitlines()
        assert len(lines) >= 1, f"rank {rank} logged no batch"


EVALUATIONS = {  # name -> `nox -s evaluate` arguments; each is run once, when a test first reads it
    "dali-1": ("--gpus", "1"),  # the DALI config's default: its DALI test loader
    "dali-2": ("--gpus", "2"),
    "dali-3": ("--gpus", "3"),
    "torch-3": ("--gpus", "3", "--loader", "torch"),  # upstream's DataLoader, the DALI config's scene shards
    "fast-1": ("--gpus", "1", "--cfg-options", "data_loading_config.image_path=fast"),
}


@pytest.fixture(scope="module")
def evaluations(
    dist_trained: tuple[Path, str], synthetic_dataset: Path, tmp_path_factory: pytest.TempPathFactory
):
    """name (``EVALUATIONS``) -> (stdout, stdout + stderr, --out folder) of `nox -s evaluate`'s runner on
    the trained checkpoint; several tests read one evaluation."""
    work, _ = dist_trained
    runs: dict[str, tuple[str, str, Path]] = {}

    def get(name: str) -> tuple[str, str, Path]:
        if name not in runs:
            out = tmp_path_factory.mktemp(f"eval-{name}") / "eval"
            runs[name] = (*evaluate(work / "iter_1.pth", synthetic_dataset, out, *EVALUATIONS[name]), out)
        return runs[name]

    return get


@pytest.mark.parametrize(  # 3 processes: the run the loaders' comparison below reads too
    "gpus", [1, pytest.param(2, marks=pytest.mark.proof), 3]
)
def test_evaluate_prints_finite_map_and_nds_for_a_fresh_checkpoint(
    evaluations, synthetic_dataset: Path, gpus: int
) -> None:
    stdout, output, out = evaluations(f"dali-{gpus}")
    assert f"with {Path(CONFIG).name}" in output, "the config dumped beside the checkpoint"
    assert "dali test loader" in output, "a DALI config evaluates on the DALI test loader"
    scores = {k: float(v) for k, v in re.findall(r"^(mAP|NDS): (\S+)$", stdout, re.MULTILINE)}
    assert set(scores) == {"mAP", "NDS"} and all(math.isfinite(v) and 0 <= v <= 1 for v in scores.values())
    assert re.search(r"^car\s+\d\.\d{4}", stdout, re.MULTILINE), "the per-class table"
    results = json.loads((out / "pts_bbox" / "results_nusc.json").read_text())["results"]
    with open(synthetic_dataset / "nuscenes2d_temporal_infos_val.pkl", "rb") as f:
        tokens = {info["token"] for info in pickle.load(f)["infos"]}
    assert set(results) == tokens, "a result for every val sample, from every rank"
    summary = json.loads((out / "pts_bbox" / "metrics_summary.json").read_text())
    # the log prints NDS with 4 decimals: half a unit of the last one, and the float64 parse
    assert math.isclose(summary["nd_score"], scores["NDS"], abs_tol=5e-5 + 1e-15)


def test_three_ranks_two_of_them_without_a_frame_give_the_results_and_metrics_of_one_process(
    evaluations, synthetic_dataset: Path
) -> None:
    """K-rank evaluation equals one process's: scene shards put the one val scene on one of 3 gloo ranks
    (the ranks ``scene_shards`` names; rank 0, which gathers, among the empty ones), and the gathered
    results, the metrics and the printed NDS are one process's, bit for bit. (The same on a 2-scene set,
    the middle rank empty, on both loaders: ``nox -s proofs``, test_eval_shards_stack.py.)"""
    from dali_streampetr.sampling.eval_shards import scene_shards

    one, _, one_out = evaluations("dali-1")
    three, _, three_out = evaluations("dali-3")
    with open(synthetic_dataset / "nuscenes2d_temporal_infos_val.pkl", "rb") as f:
        infos = sorted(pickle.load(f)["infos"], key=lambda i: i["timestamp"])
    shards = scene_shards([info["scene_token"] for info in infos], 3)
    assert "3 processes, scenes sharding" in three
    assert len(shards[0]) == 0 and sorted(len(s) for s in shards) == [0, 0, len(infos)]
    for rank, shard in enumerate(shards):
        assert f"rank {rank} of 3 (test_sharding=scenes): {len(shard)} of {len(infos)} frames" in three
    ours, theirs = (
        json.loads((out / "pts_bbox" / "results_nusc.json").read_text()) for out in (three_out, one_out)
    )
    assert ours == theirs, "results_nusc.json"
    ours, theirs = (
        json.loads((out / "pts_bbox" / "metrics_summary.json").read_text()) for out in (three_out, one_out)
    )
    assert ours.pop("eval_time") >= 0 and theirs.pop("eval_time") >= 0  # the one field that is a duration
    assert ours == theirs, "metrics_summary.json"
    assert re.findall(r"^NDS: (\S+)$", three, re.MULTILINE) == re.findall(r"^NDS: (\S+)$", one, re.MULTILINE)


def evaluate(checkpoint: Path, data: Path, out: Path, *args: str) -> tuple[str, str]:
    """`python -m upstream_run evaluate`: its stdout, and stdout + stderr. One OpenMP thread per process,
    as torchrun sets it for several, also for one: the same kernels, so one process's predictions are
    comparable bit for bit with K ranks'."""
    cmd = [sys.executable, "-m", "upstream_run", "evaluate", str(checkpoint), "--data-root", str(data)]
    cmd += ["--out", str(out), "--python", sys.executable, *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return proc.stdout, proc.stdout + proc.stderr


def matched_differences(a: list[dict], b: list[dict]) -> tuple[float, float, bool]:
    """Max |centre difference| (m) and |score difference| of two frames' boxes matched one to one
    (nearest centres; an untrained model's scores tie, so the order alone pairs nothing), and whether
    every pair has the same class."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    ca = np.array([d["translation"] for d in a])
    cb = np.array([d["translation"] for d in b])
    rows, cols = linear_sum_assignment(np.abs(ca[:, None] - cb[None]).max(-1))
    centres = float(np.abs(ca[rows] - cb[cols]).max())
    scores = max(
        abs(a[i]["detection_score"] - b[j]["detection_score"]) for i, j in zip(rows, cols, strict=True)
    )
    same = all(a[i]["detection_name"] == b[j]["detection_name"] for i, j in zip(rows, cols, strict=True))
    return centres, float(scores), same


CENTRE_BOUND_M, SCORE_BOUND = 1e-2, 1e-5


def prediction_problems(ours: dict, theirs: dict) -> list[str]:
    """The frames whose predictions differ beyond the bound: another box count, a matched pair of
    another class, a centre more than CENTRE_BOUND_M or a score more than SCORE_BOUND apart."""
    problems = []
    for token, boxes in ours.items():
        if len(boxes) != len(theirs[token]):
            problems.append(f"{token}: {len(boxes)} vs {len(theirs[token])} boxes")
            continue
        centres, scores, same = matched_differences(boxes, theirs[token])
        if not same or centres >= CENTRE_BOUND_M or scores >= SCORE_BOUND:
            problems.append(f"{token}: same classes {same}, centres {centres:.3g} m, scores {scores:.3g}")
    return problems


def test_both_test_loaders_give_the_same_predictions_on_three_ranks(evaluations) -> None:
    """The same checkpoint on 3 gloo ranks with each loader: the same frames (4, one scene: whole on one
    rank, the two others empty, rank 0 among them), the same number of boxes per frame, centres within
    1 cm and scores within 1e-5 after a one-to-one match, the same NDS to 4 decimals. The bound cannot
    be carried through the network from the image tolerance analytically; it is the measured
    difference (0.6 mm and 4e-7 on 8 frames: the images' 0.14 grey levels mean difference, carried
    through the network and its streaming memory) with a 16x/24x margin, and it is shown to catch an
    image error of the size of a wrong resize filter: the fast image path (linear instead of cubic
    resampling, 3.6x the mean image difference) breaks it, in one process (scene shards give every
    frame one process's prediction: test_eval_shards_stack.py)."""
    outputs, results = {}, {}
    for name, loader in {"dali-3": "dali", "torch-3": "torch", "fast-1": "dali"}.items():
        outputs[name], _, out = evaluations(name)
        assert f"{loader} test loader" in outputs[name]
        results[name] = json.loads((out / "pts_bbox" / "results_nusc.json").read_text())["results"]
    assert set(results["dali-3"]) == set(results["torch-3"]) == set(results["fast-1"])
    assert len(results["dali-3"]) == 4
    assert prediction_problems(results["dali-3"], results["torch-3"]) == []
    assert prediction_problems(results["fast-1"], results["torch-3"]), (
        "the bound must catch a wrong resize filter"
    )
    nds = [re.search(r"^NDS: (\S+)$", outputs[k], re.MULTILINE).group(1) for k in ("dali-3", "torch-3")]
    assert nds[0] == nds[1]


def _marked(marker: str) -> list[int]:
    """Pids of the processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _state(pid: int) -> str:
    """The process's state letter (``Z``: a zombie), or "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _ranks_and_workers(marked: list[int]) -> tuple[list[int], list[int]]:
    """The tools/test.py ranks among ``marked`` (the launcher's children) and their children (DALI
    workers). Told apart by parentage, not by command line: a worker forked from a rank (DALI forks
    while no CUDA context exists) carries the rank's command line."""

    def launcher(pid: int) -> bool:
        try:
            return b"torch.distributed" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    launchers = {p for p in marked if launcher(p)}
    ranks = [p for p in marked if _parent(p) in launchers]
    return ranks, [p for p in marked if _parent(p) in ranks]


def test_a_dist_test_sh_whose_ranks_are_killed_leaves_nothing_running(
    dist_trained: tuple[Path, str], synthetic_dataset: Path, tmp_path: Path
) -> None:
    """``tools/dist_test.sh <DALI config> <ckpt> 2`` (scene shards, the DALI config's default) on 1,600
    frames (the train infos 200 times, a pass of a minute or more: rank 1 builds no upstream dataset
    and starts seconds before rank 0, and the small model evaluates ~20 frames/s, so a short set ends
    one rank's pass before the other's starts): once both ranks run DALI worker processes, SIGKILL the
    two tools/test.py processes (what the out-of-memory killer or a scheduler does); the launcher
    exits and every DALI worker ends itself within seconds."""
    import signal
    import time
    import uuid

    work, _ = dist_trained
    key, value = "EVAL_KILL_TEST", uuid.uuid4().hex
    marker = f"{key}={value}"
    data = synthetic_dataset
    infos = pickle.loads((data / "nuscenes2d_temporal_infos_train.pkl").read_bytes())
    copies = []
    for k in range(200):  # a longer test set (the same images): the kill lands mid-pass
        for info in infos["infos"]:
            copies.append(
                {**info, "token": f"{info['token']}-{k}", "timestamp": info["timestamp"] + k * 10**9}
            )
    ann = tmp_path / "long_infos.pkl"
    ann.write_bytes(pickle.dumps({**infos, "infos": copies}))
    cmd = ["bash", "tools/dist_test.sh", CONFIG, str(work / "iter_1.pth"), "2", "--eval", "bbox",
           "--cfg-options", f"data.test.data_root={data}/", f"data.test.ann_file={ann}",
           "data_loading_config.py_num_workers=1"]  # fmt: skip
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "PORT": str(free_port()), key: value}
    proc = subprocess.Popen(cmd, cwd=CHECKOUT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline, ranks, workers = time.monotonic() + 600, [], []
        while time.monotonic() < deadline and proc.poll() is None:
            ranks, workers = _ranks_and_workers(_marked(marker))
            if len(ranks) == 2 and len({_parent(p) for p in workers}) == 2:
                break
            time.sleep(0.2)
        assert len(ranks) == 2 and len({_parent(p) for p in workers}) == 2, (ranks, workers, proc.poll())
        for pid in ranks:
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 20
        while _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _marked(marker) == [], "processes left running after the ranks were killed"
        # ended: gone, or a zombie waiting for its new parent to reap it (holds no memory, runs nothing)
        assert all(_state(p) in ("", "Z") for p in workers), {p: _state(p) for p in workers}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
