"""Offline installs from a wheelhouse: the hermetic env, and the GPU check kit's CPU half.

One wheelhouse (``python -m wheelhouse --only hermetic``, then ``python -m gpu_kits``: this Python's
kit) is collected per session through the machine's pip configuration; everything after that runs
with the index disabled, no pip config and an unreachable proxy, so any attempt to reach a network
fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from upstream_env import read_pins
from wheelhouse.requirement_locks import read_lock

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join(str(REPO / p) for p in ("scripts", "overlay"))
NO_NETWORK = {"PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "HTTP_PROXY": "http://127.0.0.1:9",
              "HTTPS_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
              "https_proxy": "http://127.0.0.1:9"}  # fmt: skip
SHM_NEEDS = 8 * 2**30  # free bytes: the hermetic env is about 2.4 GB
FREEZE_OMITS = {"pip"}  # pip freeze leaves it out of constraints/*.txt (setuptools and wheel are pinned)
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def offline_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")}, **NO_NETWORK}


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("wheelhouse")
    import torch  # the kit's DALI matches this torch (a CUDA 13 build where PyPI's torch is used: 3.12+)

    cuda = ["--cuda", "13"] if (torch.version.cuda or "").startswith("13") else []
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    for tool in (["wheelhouse", "--only", "hermetic"], ["gpu_kits", "--kit-python", PY, *cuda]):
        cmd = [sys.executable, "-m", *tool, "--out", out]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    yield out
    shutil.rmtree(out)  # about 1.4 GB: not left for pytest's retention of old temp dirs


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A temp dir for a venv of a few GB, removed after the test: in RAM (``/dev/shm``) where it has
    room, which spares a busy disk writing and deleting them, else under ``tmp_path``."""
    shm = Path("/dev/shm")
    in_ram = shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > SHM_NEEDS
    path = Path(tempfile.mkdtemp(prefix="wheelhouse-test-", dir=shm)) if in_ram else tmp_path
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_hermetic_env_builds_from_the_wheelhouse_with_the_index_disabled(
    wheelhouse: Path, scratch: Path
) -> None:
    locks = wheelhouse / "locks"
    lock = read_lock(locks / "hermetic.txt") | read_lock(locks / "hermetic-nodeps.txt")
    pins = read_pins(REPO / "constraints" / "hermetic.txt")
    # every locked wheel is pinned, at its pin (constraints also pin what 3.12/3.13 add: not all are here)
    assert set(lock) - set(pins) <= FREEZE_OMITS
    assert all(lock[n][0].split("+")[0] == pins[n] for n in pins if n in lock)
    assert {"numpy", "torch", "nvidia-dali-cuda120", "nuscenes-devkit"} <= set(lock)
    env_dir = scratch / "hermetic"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env_dir], check=True)
    python = env_dir / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", "--no-index"]
    install += ["--find-links", wheelhouse, "--require-hashes"]
    for extra, name in (([], "hermetic.txt"), (["--no-deps"], "hermetic-nodeps.txt")):
        proc = subprocess.run(
            [*install, *extra, "-r", locks / name], env=offline_env(), capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    code = "import json, numpy, torch, nuscenes, nvidia.dali as d; "
    code += "print(json.dumps([numpy.__version__, torch.__version__, d.__version__]))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [pins["numpy"], lock["torch"][0], pins["nvidia-dali-cuda120"]]


def test_gpu_check_runs_its_cpu_half_from_the_parts(wheelhouse: Path, scratch) -> None:
    kit = wheelhouse / "gpu-kit"
    manifest = json.loads((kit / "manifest.json").read_text())
    assert (
        max(p.stat().st_size for p in (kit / "parts").iterdir()) <= manifest["max_part_bytes"] == 60 * 2**20
    )
    assert any(f["name"].startswith(f"nvidia_dali_cuda{manifest['dali_cuda']}0-") for f in manifest["files"])
    work = scratch / "work"
    cmd = [sys.executable, kit / "gpu_check.py", "--quick", "--threads", "1", "--work", work]
    proc = subprocess.run(cmd, env=offline_env(), capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "gpu_check PASSED (CPU half only" in output
    assert output.count("GPU half skipped:") == 1
    import torch

    torch_site = str(Path(torch.__file__).resolve().parents[1])
    (pth,) = (work / "venv").glob("lib/python*/site-packages/_node_torch.pth")
    assert pth.read_text().strip() == torch_site  # the node's torch, not a copy
    assert not list((work / "venv").glob("lib/python*/site-packages/torch"))
    bench = json.loads((work / "results" / "bench-gpu.json").read_text())
    rows = {c["case"]["name"]: c for c in bench["cases"]}
    assert set(rows) == {"r50/dali-cpu-t1", "accv/dali-cpu-t1"}
    assert [rows[n]["samples_per_batch"] for n in ("r50/dali-cpu-t1", "accv/dali-cpu-t1")] == [2, 8]
    for row in rows.values():
        s = row["summary"]
        assert s["ms_per_batch"] > 0 and s["cpu_s_per_sample"] > 0 and s["peak_pss_mb"] > 0
        assert row["gpu_mem_mb"] is None and s["handover_ms"] is not None
    assert (work / "results" / "bench-gpu.png").stat().st_size > 10_000
    tests = (work / "results" / "tests.xml").read_text()
    # without a GPU every kit test runs and skips: as many skips as test cases, and at least one
    assert tests.count("<skipped") == tests.count("<testcase") > 0
    assert 'failures="0"' in tests and 'errors="0"' in tests
