"""Stack tier: a training run killed while it writes a checkpoint (the real StreamPETR, the DALI
loader, the small CPU config) leaves checkpoints whole or absent, and a plain --auto-resume
continues from the last whole one with the same data stream.

The kill is real: the training process runs `tools/train.py` through a driver that makes mmcv's
file write of the chosen checkpoint stop half-way and SIGKILL the process (a preemption or an OOM
kill in the middle of `torch.save`'s output). A torn file as mmcv 1.6 left it in place is then
planted to show that --auto-resume skips it by name and --resume-from refuses it by name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from stack_runs import assert_same_stream, reference_stream, train

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
pytestmark = [pytest.mark.stack, pytest.mark.slow]

# Runs tools/train.py (argv[1:]) with mmcv's checkpoint write cut: the KILL_AT-th checkpoint
# written gets half of its bytes, then the process is SIGKILLed.
DRIVER = textwrap.dedent(
    """
    import os, runpy, signal, sys
    from mmcv.fileio.file_client import HardDiskBackend

    put, written = HardDiskBackend.put, []

    def torn_put(self, obj, filepath):
        if ".pth" in str(filepath):
            written.append(filepath)
            if len(written) == int(os.environ["KILL_AT_CHECKPOINT"]):
                with open(filepath, "wb") as f:
                    f.write(obj[: len(obj) // 2])
                    f.flush()
                    os.fsync(f.fileno())
                os.kill(os.getpid(), signal.SIGKILL)
        return put(self, obj, filepath)

    HardDiskBackend.put = torn_put
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def killed_in_checkpoint_write(
    data_root: Path, work_dir: Path, tmp: Path, kill_at: int, *args: str, loader: str = "dali"
) -> None:
    """`upstream_run train --loader LOADER --config small ARGS`, SIGKILLed half-way through writing
    its `kill_at`-th checkpoint."""
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    from upstream_run.train import parse_args, train_command

    opts = [
        "--loader",
        loader,
        "--config",
        "small",
        "--data-root",
        str(data_root),
        "--work-dir",
        str(work_dir),
    ]
    cmd = train_command(parse_args([*opts, *args]))
    driver = tmp / "torn_checkpoint_driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "KILL_AT_CHECKPOINT": str(kill_at)}
    work_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [cmd[0], str(driver), *cmd[1:]], cwd=CHECKOUT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == -9, (proc.stdout + proc.stderr)[-4000:]


def checkpoint_files(work_dir: Path) -> dict[str, str]:
    """name -> 'whole' / 'torn' / 'link to X' of every *.pth in the work dir, and hidden leftovers."""
    import torch

    found = {}
    for path in sorted(work_dir.glob("*.pth")) + sorted(work_dir.glob(".*.partial")):
        if path.is_symlink() and path.suffix == ".pth":
            found[path.name] = f"link to {os.readlink(path)}"
            continue
        try:
            torch.load(path, map_location="cpu", weights_only=False)
            found[path.name] = "whole"
        except Exception:  # noqa: BLE001 - any failure to load is what "torn" means here
            found[path.name] = "torn"
    return found


def test_the_pytorch_loader_run_killed_in_its_first_checkpoint_write_leaves_no_torn_file(
    synthetic_dataset: Path, tmp_path: Path
) -> None:
    """The atomic write is in runner.save_checkpoint, whichever loader trains."""
    work = tmp_path / "run"
    killed_in_checkpoint_write(
        synthetic_dataset, work, tmp_path, 1, "--iters", "1", "--workers", "0", loader="torch"
    )
    assert checkpoint_files(work) == {".iter_1.pth.partial": "torn"}


def test_kills_during_the_first_and_a_later_checkpoint_write_then_auto_resume_continues_the_stream(
    synthetic_dataset: Path, tmp_path: Path
) -> None:
    """2 iterations, a checkpoint after each, max_keep_ckpts=1, the DALI loader.

    1. Killed while writing iter_1.pth, the first checkpoint: no iter_1.pth, no latest.pth, only the
       hidden partial file. The torn iter_1.pth mmcv 1.6 would have left in place is planted:
       --resume-from refuses it by name.
    2. --auto-resume logs that it skips the torn file and starts a new run, which is killed while
       writing iter_2.pth: iter_1.pth (the last whole one, which max_keep_ckpts would remove) and
       latest.pth pointing at it are kept.
    3. --auto-resume continues from it to iteration 2: whole checkpoints, no leftovers, and every
       batch slot of every iteration got the frame, draw and pixels of an uninterrupted stream.
    """
    work = tmp_path / "run"
    every = ["--cfg-options", "checkpoint_config.interval=1", "checkpoint_config.max_keep_ckpts=1"]
    killed_in_checkpoint_write(synthetic_dataset, work, tmp_path, 1, "--iters", "2", *every)
    assert checkpoint_files(work) == {".iter_1.pth.partial": "torn"}

    torn = work / "iter_1.pth"
    shutil.copyfile(work / ".iter_1.pth.partial", torn)  # the in-place write of mmcv 1.6, torn
    refused = train(synthetic_dataset, work, "--iters", "2", "--resume-from", str(torn), ok=False)
    assert f"--resume-from {torn}: the file is incomplete or corrupt" in refused

    killed_in_checkpoint_write(synthetic_dataset, work, tmp_path, 2, "--iters", "2", "--auto-resume", *every)
    log = "\n".join(p.read_text() for p in sorted(work.glob("*.log")))
    assert f"auto-resume: skipped {torn}: the file is incomplete or corrupt" in log
    assert f"auto-resume: no checkpoint in {work}, starting a new run" in log
    assert checkpoint_files(work) == {
        ".iter_2.pth.partial": "torn",
        "iter_1.pth": "whole",
        "latest.pth": "link to iter_1.pth",
    }

    out = train(synthetic_dataset, work, "--iters", "2", "--auto-resume", *every)
    assert f"auto-resume: resuming from {work / 'iter_1.pth'}" in out  # the number decides, not latest.pth
    assert "Iter [2/2]" in out and "Iter [1/2]" not in out, out[-3000:]
    assert checkpoint_files(work) == {"iter_2.pth": "whole", "latest.pth": "link to iter_2.pth"}
    reference = reference_stream(synthetic_dataset, tmp_path / "ref", world_size=1, mode="shard", iters=2)
    assert_same_stream(work, reference, iters=2, ranks=1)


def test_auto_resume_skips_a_checkpoint_whose_dali_state_does_not_fit(
    synthetic_dataset: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """tools/train.py's choice (tools/tool_hooks/checkpoint_probe.py) with the DALI loader's check: the newest
    checkpoint (iter_4.pth, another seed's stream) is skipped with the field named; iter_2.pth (this
    stream) is taken. A checkpoint without a DALI state (the PyTorch loader's) is accepted."""
    import importlib.util
    import logging

    import torch

    sys.path.insert(0, str(CHECKOUT))
    from dali_streampetr import build_dali_loader
    from dali_streampetr.resume import META_KEY
    from mmcv import Config

    cfg = Config.fromfile(str(CHECKOUT / "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"))
    cfg.data.train.data_root = f"{synthetic_dataset}/"
    cfg.data.train.ann_file = str(synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl")
    cfg.data_loading_config.log_slots = False
    cfg.work_dir, cfg.seed = str(tmp_path), 0
    loader = build_dali_loader(cfg, "train", rank=0, world_size=1)
    mine = loader.state_dict()
    work = tmp_path / "work"
    work.mkdir()
    for n, state in ((2, mine), (4, {**mine, "seed": 7})):
        meta = {"iter": n - 1, META_KEY: {"ranks": [state]}}
        torch.save({"meta": meta, "state_dict": {}}, work / f"iter_{n}.pth")
    torch.save({"meta": {"iter": 5}, "state_dict": {}}, tmp_path / "torch_loader.pth")
    assert loader.checkpoint_problem(str(tmp_path / "torch_loader.pth")) is None

    spec = importlib.util.spec_from_file_location(
        "checkpoint_probe", CHECKOUT / "tools" / "tool_hooks" / "checkpoint_probe.py"
    )
    auto_resume = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(auto_resume)
    logger = logging.getLogger("auto-resume-test")
    with caplog.at_level(logging.WARNING, logger="auto-resume-test"):
        chosen = auto_resume.find_resumable_checkpoint(str(work), logger, [loader.checkpoint_problem])
    assert chosen == str(work / "iter_2.pth")
    skipped = [r.getMessage() for r in caplog.records if r.name == "auto-resume-test"]
    assert len(skipped) == 1 and skipped[0].startswith(f"auto-resume: skipped {work / 'iter_4.pth'}: ")
    assert "its DALI loader state does not fit this run" in skipped[0] and "seed is 7" in skipped[0]
    loader.close()
