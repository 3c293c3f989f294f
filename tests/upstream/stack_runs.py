"""Helpers of the stack-tier tests here: the upstream env's python in the applied checkout, and
training runs with their slot logs (the stream each batch slot saw)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
PYTHON = REPO_ROOT / ".nox" / "_env" / "upstream" / "bin" / "python"
SMALL_DALI = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"
FIRST_ITERS = 2  # the session's fresh DALI run (conftest.py's dali_first_run)

# Makes `import flash_attn` fail whether or not it is installed.
BLOCK_FLASH_ATTN = "import sys; sys.modules['flash_attn'] = None\n"


def run_in_stack(code: str, timeout: float = 600) -> str:
    """Run `code` with the upstream env's python in the checkout; return stdout, fail with stderr."""
    proc = subprocess.run(
        [str(PYTHON), "-c", BLOCK_FLASH_ATTN + textwrap.dedent(code)],
        cwd=CHECKOUT,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    return proc.stdout


def train(data_root: Path, work_dir: Path, *args: str, ok: bool = True) -> str:
    """`python -m upstream_run train --loader dali --config small ...`; stdout + stderr."""
    cmd = [sys.executable, "-m", "upstream_run", "train", "--loader", "dali", "--config", "small"]
    cmd += ["--data-root", str(data_root), "--work-dir", str(work_dir), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
    output = proc.stdout + proc.stderr
    assert (proc.returncode == 0) == ok, output[-6000:]
    return output


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], str]
) -> tuple[Path, str]:
    """A folder and the output of ``make(folder)``, made once per test run: pytest-xdist's workers (``-n``)
    share the run's temp root and take turns under a lock there; the first makes it, the others read its
    record (a failed make leaves none: the next worker tries afresh, in a folder of its own)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # workers: <run>/popen-gwN
    record = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            made = json.loads(record.read_text(encoding="utf-8"))
            return Path(made["folder"]), made["output"]
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
        output = make(folder)
        record.write_text(json.dumps({"folder": str(folder), "output": output}), encoding="utf-8")
        return folder, output


def slot_logs(work_dir: Path) -> dict[int, list[dict]]:
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    from upstream_run.slots import read_logs

    return read_logs(work_dir)


def assert_same_stream(a: Path, b: Path, iters: int, ranks: int) -> None:
    from upstream_run.slots import differences

    logs_a, logs_b = slot_logs(a), slot_logs(b)
    assert sorted(logs_a) == list(range(ranks))
    assert all(len(records) == iters for records in logs_a.values()), {r: len(v) for r, v in logs_a.items()}
    assert differences(logs_a, logs_b) == []


def reference_stream(data_root: Path, out: Path, *, world_size: int, mode: str, iters: int) -> Path:
    """The loader's uninterrupted stream for every rank (no model): the slot logs a straight run writes."""
    sys.path.insert(0, str(CHECKOUT))
    from dali_streampetr import build_dali_loader
    from mmcv import Config

    cfg = Config.fromfile(str(CHECKOUT / SMALL_DALI))
    cfg.data.train.data_root = f"{data_root}/"
    cfg.data.train.ann_file = str(data_root / "nuscenes2d_temporal_infos_train.pkl")
    cfg.data_loading_config.replicate_dataset_per_gpu = mode == "replicate"
    cfg.work_dir, cfg.seed = str(out), 0
    for rank in range(world_size):
        loader = build_dali_loader(cfg, "train", rank=rank, world_size=world_size)
        for _ in range(iters):
            next(loader)
        loader.close()
    return out
