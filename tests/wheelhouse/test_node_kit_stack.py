"""The stack kit rehearsed on this CPU host: every step of ``gpu_check.py --stack`` but the GPU ones.

A stack kit is made for this Python from the package index (``--kit-mmcv-wheel``: the OpenMMLab env's
cached mmcv-full CPU wheel stands in for the node's CUDA compile, which does not fit CI), then run
with the index disabled, no pip config and an unreachable proxy on a stand-in for the node's python
(the OpenMMLab env's torch and torchvision alone, ``standin_node.py``): parts verified, the applied
tree checked against apply's digests, the env built on that torch from the kit's wheels, the driver
check (no GPU here: CPU), the data, the GPU tests (each skips), one training iteration on each loader,
the DALI checkpoint evaluated with both test loaders, the benchmark's CPU rows.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from standin_node import make_standin

pytestmark = [pytest.mark.stack, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join(str(REPO / p) for p in ("scripts", "overlay"))
UNREACHABLE = "http://127.0.0.1:9"
STEPS = ["parts", "mmcv", "env", "check", "data", "tests", "train_dali", "train_torch", "evaluate", "bench"]
SHM_NEEDS = 8 * 2**30  # the kit (~0.6 GB), its reassembled wheels and the env (~2.5 GB)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    shm = Path("/dev/shm")
    in_ram = shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > SHM_NEEDS
    path = Path(tempfile.mkdtemp(prefix="stack-kit-test-", dir=shm if in_ram else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack_kit(scratch: Path) -> Path:
    import torch

    version, cuda = f"{sys.version_info[0]}.{sys.version_info[1]}", torch.version.cuda.split(".")[0]
    cmd = [sys.executable, "-m", "wheelhouse", "--out", scratch / "wh", "--only", "stack-kit", "--kit-python",
           version, "--cuda", cuda, "--kit-mmcv-wheel"]  # fmt: skip
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": PYTHONPATH}, capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return scratch / "wh" / "gpu-stack-kit"


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    proxies = {k: UNREACHABLE for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    return {**env, **proxies, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}


def test_the_kit_carries_what_the_node_lacks_in_bundles_that_travel_one_by_one(stack_kit: Path) -> None:
    manifest = json.loads((stack_kit / "manifest.json").read_text())
    names = [f["name"] for f in manifest["files"]]
    assert not [n for n in names if n.startswith(("torch-", "torchvision-", "nvidia_cublas", "triton-"))]
    assert any(n.startswith("nvidia_dali_cuda1") for n in names) and "mmcv-full-1.6.0.tar.gz" in names
    sizes: dict[str, int] = {}
    for entry in manifest["files"]:
        for part in entry["parts"]:
            sizes[part["bundle"]] = sizes.get(part["bundle"], 0) + part["size"]
            assert (stack_kit.parent / "gpu-stack-parts" / part["bundle"] / part["name"]).is_file()
    assert max(sizes.values()) <= manifest["max_part_bytes"] == 60 * 2**20
    early = {
        p["bundle"] for e in manifest["files"] if e["name"] in manifest["stack"]["early"] for p in e["parts"]
    }
    assert early == {"b01"}


def test_the_stack_runs_offline_on_a_stand_in_for_the_nodes_python(stack_kit: Path, scratch: Path) -> None:
    node_python = make_standin(REPO / ".nox" / "_env" / "upstream" / "bin" / "python", scratch / "node")
    work, results = scratch / "work", scratch / "results"
    cmd = [node_python, stack_kit / "gpu_check.py", "--stack", "--quick", "--iters", "1", "--work", work,
           "--results", results]  # fmt: skip
    proc = subprocess.run(cmd, env=offline_env(), capture_output=True, text=True, timeout=2400)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "gpu_check --stack PASSED (every step)" in output and "torch sees no CUDA device" in output
    summary = json.loads((results / "stack-run.json").read_text())
    assert list(summary["steps"]) == STEPS and all(s["ok"] for s in summary["steps"].values())
    assert summary["steps"]["parts"]["applied_files"] > 100
    assert (
        summary["steps"]["check"]["verdict"]
        == "driver_check: CPU: no NVIDIA GPU on this host (no NVIDIA driver)"
    )
    # the env runs the stand-in's torch (not a copy) with the kit's mmcv-full and DALI
    env_python = work / "src" / ".nox" / "_env" / "upstream" / "bin" / "python"
    where = "import json, torch, mmcv, nvidia.dali as d; "
    where += "print(json.dumps([torch.__file__, mmcv.__file__, d.__file__]))"
    files = json.loads(
        subprocess.run([env_python, "-c", where], capture_output=True, text=True, check=True).stdout
    )
    assert files[0].startswith(str(scratch / "node" / "node-site"))
    assert all(f.startswith(str(work / "src" / ".nox")) for f in files[1:])
    for loader in ("dali", "torch"):
        losses = summary["steps"][f"train_{loader}"]["checks"][0]  # upstream_run's checks of the run
        assert losses.startswith(f"train_{loader}: 1 iterations;") and losses.endswith("all losses finite")
        metrics = dict(ln.split(":") for ln in summary["steps"]["evaluate"]["metrics"][loader])
        assert set(metrics) == {"mAP", "NDS"} and all(math.isfinite(float(v)) for v in metrics.values())
    bench = json.loads((results / "bench.json").read_text())
    assert {c["case"]["name"] for c in bench["cases"]} == {"r50/torch-w1", "r50/dali-cpu-t1"}
    assert all(c["summary"]["ms_per_batch"] > 0 for c in bench["cases"])
    assert (results / "bench.png").stat().st_size > 10_000
    tests = (results / "tests.xml").read_text()
    assert tests.count("<skipped") == tests.count("<testcase") > 0  # no GPU: each GPU test skips
    assert sorted(p.name for p in results.iterdir()) == [
        "bench.json",
        "bench.png",
        "stack-run.json",
        "tests.xml",
    ]
