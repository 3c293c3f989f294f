"""Stack tier: multi-process evaluation equal to one process with scene-whole test shards (#44), on
both test loaders (``LOADERS``: upstream's DataLoader and the DALI test loader).

One checkpoint (the small 128x352 config at its random init: every test reads the same file), and a
synthetic set of 3-frame scenes: its train infos (5 scenes, 15 frames) are the test set of the
per-frame comparisons, its val infos (2 scenes, 6 frames) the set nuscenes-devkit evaluates. Both
are made once per module.

- ``data_loading_config.test_sharding='scenes'`` (the default of a DALI config) on K gloo ranks of
  ``tools/test.py``: every frame's prediction (each box's every field, as the JSON holds it) is the
  one process's of the same loader, bit for bit (the same kernels on every rank: one thread per
  process, as torchrun sets it for several), the ranks hold the shards ``eval_shards.scene_shards``
  computes. So each loader's predictions at K ranks compare with the other's as at one process: within
  the bound between the loaders on a trained checkpoint (test_workflow_stack.py, 3 ranks, scene
  shards); not on this untrained one, whose near-tied scores make the top-300 selection pick other
  boxes under the loaders' 1e-6 score difference (a box or more differs on 5 of the 15 frames);
- ``'upstream'`` at the same rank counts: exactly the frames after each cut differ, named;
- ``nox -s evaluate`` on 3 ranks of the 2-scene val set (the middle rank holds no frame): the same
  results and the same metrics as one process; ``--validate`` on 2 ranks, evaluating twice, reports
  what one process's evaluation of its checkpoint reports;
- the gather itself (``gather_results_cpu`` and ``_gpu`` of ``dali_streampetr.runner.eval_gather``,
  which the patched ``custom_multi_gpu_test`` calls through ``gather_results``) on gloo with 1 and 4
  ranks, rank 0 empty, and a lost frame named.

``nox`` (CI) runs the focused part: the DALI test loader, scene shards at K = 3 (15 frames, 5 scenes: no
multiple of 3), without ``--validate``; ``nox -s evaluate`` on K ranks against one process is
test_workflow_stack.py's (3 ranks, two of them empty, on the checkpoint it trains); upstream's chunks,
which show why scene shards exist (a fact of upstream's loader; the DALI loader's chunks at 1-3 ranks
are the hermetic tier's, tests/loader/test_loader_test_split.py), run in the proofs; the rest is marked
``proof`` and runs in ``nox -s proofs``: K = 2, 3, 4, the 2-scene ``nox -s evaluate`` and every test
on both loaders (docs/tests.md gives both times).
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stack_runs import CHECKOUT, PYTHON, REPO_ROOT, SMALL_DALI
from upstream_run.train import free_port

pytestmark = [pytest.mark.stack, pytest.mark.slow]
LOADERS = ("torch", "dali")
SMALL_TORCH = "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py"
ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # what torchrun sets for several processes, also for one


def cases(ci: set[tuple], *axes: tuple) -> list:
    """Every combination of ``axes`` as parameters; those not in ``ci`` (what ``nox`` runs) are marked
    ``proof`` (``nox -s proofs``)."""
    return [pytest.param(*c, marks=() if c in ci else pytest.mark.proof) for c in itertools.product(*axes)]


@pytest.fixture(scope="module")
def shard_data() -> Path:
    """7 scenes of 3 key frames: 5 train scenes (15 frames, no multiple of 2, 3 or 4 scenes), 2 val."""
    from synthdata import ensure_dataset

    return ensure_dataset(scenes=7, samples_per_scene=3, seed=0)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small config's model at its (seeded) random init, saved as a checkpoint (made in this
    process, the OpenMMLab env's: no interpreter of its own; the seed is this fixture's alone)."""
    import torch

    sys.path.insert(0, str(CHECKOUT))
    import projects.mmdet3d_plugin  # noqa: F401 - registers the plugin's modules
    from mmcv import Config
    from mmcv.runner import save_checkpoint
    from mmdet3d.models import build_model

    path = tmp_path_factory.mktemp("ckpt") / "init.pth"
    cfg = Config.fromfile(str(CHECKOUT / SMALL_DALI))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = build_model(cfg.model, train_cfg=cfg.get("train_cfg"), test_cfg=cfg.get("test_cfg"))
        model.init_weights()
    save_checkpoint(model, str(path), meta={"CLASSES": list(cfg.class_names)})
    return path


def infos_order(infos: Path) -> list[dict]:
    """The test set's frames in dataset order (upstream's dataset sorts by timestamp)."""
    with infos.open("rb") as f:
        return sorted(pickle.load(f)["infos"], key=lambda i: i["timestamp"])


def run_test_py(
    checkpoint: Path, infos: Path, out: Path, *, ranks: int, loader: str, sharding: str = ""
) -> str:
    """`tools/test.py --format-only` of the small DALI config on ``infos`` (one process: the
    non-distributed reference; several: torchrun, gloo); the results JSON goes to ``out``."""
    options = [f"data.test.data_root={infos.parent}/", f"data.test.ann_file={infos}"]
    options += [f"use_dali_test_pipeline={loader == 'dali'}"]
    options += [f"data_loading_config.test_sharding={sharding}"] if sharding else []
    script = ["tools/test.py", SMALL_DALI, str(checkpoint), "--format-only", "--cfg-options", *options]
    script += ["--eval-options", f"jsonfile_prefix={out}"]
    if ranks == 1:
        cmd = [str(PYTHON), *script]
    else:
        cmd = [str(PYTHON), "-m", "torch.distributed.run", f"--nproc_per_node={ranks}"]
        cmd += ["--master_addr=127.0.0.1", f"--master_port={free_port()}", *script]
        cmd += ["--launcher", "pytorch", "--tmpdir", str(out / ".collect")]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(CHECKOUT)}
    proc = subprocess.run(cmd, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return proc.stdout


def results(out: Path) -> dict[str, list[dict]]:
    return json.loads((out / "pts_bbox" / "results_nusc.json").read_text())["results"]


@pytest.fixture(scope="module")
def predictions(checkpoint: Path, shard_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """(loader, ranks, sharding) -> (per-frame predictions, tools/test.py's stdout), each run once."""
    runs: dict[tuple[str, int, str], tuple[dict, str]] = {}
    infos = shard_data / "nuscenes2d_temporal_infos_train.pkl"

    def get(loader: str, ranks: int, sharding: str = "") -> tuple[dict, str]:
        key = (loader, ranks, sharding)
        if key not in runs:
            out = tmp_path_factory.mktemp(f"{loader}-{ranks}-{sharding or 'default'}")
            stdout = run_test_py(checkpoint, infos, out, ranks=ranks, loader=loader, sharding=sharding)
            runs[key] = results(out), stdout
        return runs[key]

    return get


def rank_frames(stdout: str) -> dict[int, tuple[str, int]]:
    """rank -> (test_sharding, frames) as tools/test.py prints them."""
    found = re.findall(
        r"rank (\d+) of \d+ \(test_sharding=(\w+)\): (\d+) of", stdout
    )  # also after a progress bar
    return {int(r): (mode, int(n)) for r, mode, n in found}


def differing(ours: dict, theirs: dict, order: list[dict]) -> list[str]:
    """The frames (index and token, dataset order) whose predictions differ in any field."""
    return [
        f"{i} {info['token']}" for i, info in enumerate(order) if ours[info["token"]] != theirs[info["token"]]
    ]


@pytest.mark.parametrize(("ranks", "loader"), cases({(3, "dali")}, (2, 3, 4), LOADERS))
def test_scene_shards_give_every_frame_the_prediction_of_one_process(
    predictions, shard_data: Path, loader: str, ranks: int
) -> None:
    from dali_streampetr.sampling.eval_shards import scene_shards

    order = infos_order(shard_data / "nuscenes2d_temporal_infos_train.pkl")
    one, _ = predictions(loader, 1)
    ours, stdout = predictions(loader, ranks)  # the DALI config's default
    shards = scene_shards([info["scene_token"] for info in order], ranks)
    assert rank_frames(stdout) == {r: ("scenes", len(s)) for r, s in enumerate(shards)}
    assert set(ours) == set(one) and len(one) == 15
    assert differing(ours, one, order) == []


@pytest.mark.parametrize(("ranks", "loader"), cases(set(), (2, 3, 4), LOADERS))
def test_upstream_chunks_change_exactly_the_frames_after_each_cut(
    predictions, shard_data: Path, loader: str, ranks: int
) -> None:
    """Why scene shards exist: at the same rank counts upstream's chunks cut scenes (15 frames: at 8;
    at 5 and 10; at 4 and 8), and the frames after each cut, up to their scene's end, lose the memory
    of the frames before: their predictions differ from one process's; every other frame's do not."""
    from dali_streampetr.sampling.eval_shards import frames_without_memory, upstream_chunks

    order = infos_order(shard_data / "nuscenes2d_temporal_infos_train.pkl")
    one, _ = predictions(loader, 1)
    ours, stdout = predictions(loader, ranks, "upstream")
    assert set(rank_frames(stdout).values()) == {("upstream", -(-15 // ranks))}
    cut = frames_without_memory([i["scene_token"] for i in order], upstream_chunks(len(order), ranks))
    assert cut == {2: [8], 3: [5, 10, 11], 4: [4, 5, 8]}[ranks]
    assert differing(ours, one, order) == [f"{i} {order[i]['token']}" for i in cut]


def evaluate(checkpoint: Path, data: Path, out: Path, *args: str) -> str:
    """`nox -s evaluate`'s runner on the val infos of ``data``; its stdout."""
    cmd = [sys.executable, "-m", "upstream_run", "evaluate", str(checkpoint), "--data-root", str(data)]
    cmd += ["--out", str(out), "--python", str(PYTHON), *args]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return proc.stdout


def metrics(folder: Path) -> dict:
    summary = json.loads((folder / "pts_bbox" / "metrics_summary.json").read_text())
    summary.pop("eval_time")
    return summary


@pytest.mark.parametrize("loader", cases(set(), LOADERS))  # nox: test_workflow_stack.py's 1 and 3 ranks
def test_evaluate_on_three_ranks_one_without_a_scene_gives_the_metrics_of_one_process(
    checkpoint: Path, shard_data: Path, tmp_path: Path, loader: str
) -> None:
    one = evaluate(checkpoint, shard_data, tmp_path / "one", "--config", SMALL_DALI, "--loader", loader)
    three = evaluate(
        checkpoint, shard_data, tmp_path / "three", "--config", SMALL_DALI, "--loader", loader, "--gpus", "3"
    )
    assert "3 processes, scenes sharding" in three
    assert "rank 1 of 3 (test_sharding=scenes): 0 of 6 frames" in three  # ideal cuts 2 and 4: both at 3
    assert results(tmp_path / "three") == results(tmp_path / "one")
    assert metrics(tmp_path / "three") == metrics(tmp_path / "one")
    assert re.search(r"^NDS: (\S+)$", one, re.MULTILINE).group(1) == re.search(
        r"^NDS: (\S+)$", three, re.MULTILINE
    ).group(1)


@pytest.mark.proof
@pytest.mark.parametrize("loader", LOADERS)
def test_validate_on_two_ranks_reports_what_one_process_evaluates(
    checkpoint: Path, shard_data: Path, tmp_path: Path, loader: str
) -> None:
    """The --validate hook (CustomDistEvalHook on 2 gloo ranks, scene shards of the 2-scene val set:
    one scene per rank) after iterations 1 and 2; one process's tools/test.py on iter_2.pth gives the
    second evaluation's results and metrics (the second: each rank's first frame is of the scene its
    first evaluation ended with). Two ranks, not three: three training ranks need about 11 GB here.
    The DALI config trains and evaluates on DALI (scene shards: its default); the other trains and
    evaluates on upstream's DataLoader, scene shards by name."""
    work = tmp_path / "work"
    cmd = [sys.executable, "-m", "upstream_run", "train", "--loader", loader, "--config", "small"]
    cmd += ["--data-root", str(shard_data), "--work-dir", str(work), "--iters", "2", "--gpus", "2"]
    cmd += ["--validate", "--eval-interval", "1", "--python", str(PYTHON)]
    cmd += ["--cfg-options", "data_loading_config.test_sharding=scenes"] if loader == "torch" else []
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert rank_frames(proc.stdout) == {0: ("scenes", 3), 1: ("scenes", 3)}, "the hook's val shards"
    [log] = work.glob("*.log.json")
    evaluated = [json.loads(line) for line in log.read_text().splitlines() if '"mode": "val"' in line]
    assert len(evaluated) == 2, evaluated  # after iterations 1 and 2
    # the hook's JSON folder is named once, when the hook is made: it holds the last evaluation's
    [second] = [p.parent.parent for p in work.glob("*/pts_bbox/metrics_summary.json")]
    config = {"torch": SMALL_TORCH, "dali": SMALL_DALI}[loader]
    evaluate(work / "iter_2.pth", shard_data, tmp_path / "one", "--config", config, "--loader", loader)
    assert results(second) == results(tmp_path / "one")
    assert metrics(second) == metrics(tmp_path / "one")


GATHER = """
import multiprocessing, os, sys, torch.distributed as dist
from dali_streampetr.runner.eval_gather import gather_results_cpu, gather_results_gpu
from dali_streampetr.sampling.eval_shards import scene_shards
ids, folder, mode = ['a', 'a', 'a', 'b', 'b'], sys.argv[1], sys.argv[2]
lose = mode == 'lose'

def rank(r, k):
    dist.init_process_group('gloo', init_method=f'file://{folder}/{mode}-store{k}', rank=r, world_size=k)
    shard = list(scene_shards(ids, k)[r])
    if lose and shard:
        shard = shard[:-1]
    part = [f'frame {i}' for i in shard]
    gathered = []
    collects = {'cpu': lambda: gather_results_cpu(part, len(ids), f'{folder}/{mode}{k}', indices=shard),
                'gpu': lambda: gather_results_gpu(part, len(ids), indices=shard)}
    for name, collect in collects.items():  # every rank joins both collectives
        try:
            gathered.append(collect())
        except ValueError as exc:
            gathered.append(f'{name} rank {r}: {exc}')
    if r == 0:
        print(f'K={k} shards={[len(s) for s in scene_shards(ids, k)]}', *gathered, sep=' | ', flush=True)
    os._exit(0)

for k in (1, 4):
    procs = [multiprocessing.get_context('fork').Process(target=rank, args=(r, k)) for r in range(k)]
    [p.start() for p in procs]
    [p.join() for p in procs]
"""


def test_the_gather_puts_unequal_shards_in_dataset_order_with_an_empty_rank_0_and_one_rank(
    tmp_path: Path,
) -> None:
    """gather_results_cpu and gather_results_gpu (all_gather_object) on real gloo groups of 1 and 4
    ranks over 2 scenes (3 + 2 frames: 4 ranks get 0, 3, 0, 2: the rank that gathers holds none);
    with each rank's last frame lost, rank 0 names the frames no rank returned."""
    script = tmp_path / "gather.py"
    script.write_text(GATHER)
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    frames = [f"frame {i}" for i in range(5)]
    for mode in ("keep", "lose"):
        proc = subprocess.run(
            [str(PYTHON), str(script), str(tmp_path), mode], cwd=CHECKOUT, env=env, capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
        lines = proc.stdout.splitlines()
        if mode == "keep":
            assert lines == [
                f"K=1 shards=[5] | {frames} | {frames}",
                f"K=4 shards=[0, 3, 0, 2] | {frames} | {frames}",
            ]
        else:
            one, four = (
                "1 of 5 frames came back from no rank: 4",
                "2 of 5 frames came back from no rank: 2, 4",
            )
            assert lines == [
                f"K=1 shards=[5] | cpu rank 0: {one} | gpu rank 0: {one}",
                f"K=4 shards=[0, 3, 0, 2] | cpu rank 0: {four} | gpu rank 0: {four}",
            ]
