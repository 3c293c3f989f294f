"""The stack kit rehearsed on this CPU host: every step of ``gpu_check.py --stack`` but the GPU ones.

A stack kit is made for this Python from the package index, then run with the index disabled, no pip
config and an unreachable proxy on a stand-in for the node's python (the OpenMMLab env's torch and
torchvision alone, ``standin_node.py``): parts verified, the applied tree checked against apply's
digests, mmcv-full compiled on that torch by ``upstream_env mmcv-wheel`` (the CPU set: no GPU here; the
CUDA compile does not fit CI), the env built there by ``upstream_env build`` with the same choices,
reusing that wheel, from the kit's wheels alone, the driver check (CPU), the data, the GPU tests
(each skips), one training iteration on each loader, the DALI checkpoint evaluated with both test
loaders, the benchmark's CPU rows.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from standin_node import make_standin
from wheelhouse.requirement_locks import read_lock

pytestmark = [pytest.mark.stack, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join(str(REPO / p) for p in ("scripts", "overlay"))
UNREACHABLE = "http://127.0.0.1:9"
STEPS = ["parts", "mmcv", "env", "check", "data", "tests", "train_dali", "train_torch", "evaluate", "bench"]
SHM_NEEDS = 8 * 2**30  # the kit (~0.6 GB), its reassembled wheels and the env (~2.5 GB)


# Run in the node's env: where torch, mmcv, DALI and cv2 come from, and every installed version
WHERE = """
import importlib.metadata as md, json, re, cv2, mmcv, torch, nvidia.dali as dali
versions = {}
for d in md.distributions():  # in path order: the env's own first
    versions.setdefault(re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(), d.version)
print(json.dumps({"torch": torch.__file__, "mmcv": mmcv.__file__, "dali": dali.__file__, "cv2": cv2.__file__,
                  "versions": versions}))
"""


def read(work: Path, step: str) -> str:
    return (work / "logs" / f"{step}.log").read_text()


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
    cmd = [sys.executable, "-m", "gpu_kits", "--out", scratch / "wh", "--only", "stack-kit", "--kit-python",
           version, "--cuda", cuda]  # fmt: skip
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
    assert "opencv_python-" not in " ".join(names), (
        "mmcv-full is installed --no-deps: cv2 is the headless one's"
    )
    # cuobjdump alone (a node toolkit may lack it, as this host's), not the toolkit (--kit-toolkit)
    assert (
        [n for n in names if n.startswith("nvidia_cuda_")]
        == [n for n in names if n.startswith("nvidia_cuda_cuobjdump-")]
        != []
    )
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


# `nox -s proofs`; `nox -s node_rehearsal` runs the same kit call by call, CUDA ops included
@pytest.mark.proof
def test_the_stack_runs_offline_on_a_stand_in_for_the_nodes_python(stack_kit: Path, scratch: Path) -> None:
    node_python = make_standin(REPO / ".nox" / "_env" / "upstream" / "bin" / "python", scratch / "node")
    work, results = scratch / "work", scratch / "results"
    cmd = [node_python, stack_kit / "gpu_check.py", "--stack", "--quick", "--iters", "1", "--workers", "1",
           "--work", work, "--results", results]  # fmt: skip
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
    # the background step compiled the wheel, the env step reused it: one compile, one key
    assert "compiling mmcv-full 1.6.0 (CPU ops, reduced set" in read(work, "mmcv")
    key = re.findall(r"mmcv-full wheel ready in \d+ s: .*/(\S+)$", read(work, "mmcv"), re.M)[-1]
    assert f"reusing cached wheel {key}" in read(work, "env") and "compiling" not in read(work, "env")
    assert [p.name for p in (work / "cache" / "wheels" / "mmcv-full").iterdir()] == [key]
    # the env runs the stand-in's torch (not a copy), every other package from the kit's wheels, each
    # at its lock's version; cv2 from opencv-python-headless (mmcv-full --no-deps: no opencv-python)
    env_python = work / "src" / ".nox" / "_env" / "upstream" / "bin" / "python"
    facts = json.loads(
        subprocess.run([env_python, "-c", WHERE], capture_output=True, text=True, check=True).stdout
    )
    assert facts["torch"].startswith(str(scratch / "node" / "node-site"))
    assert all(facts[m].startswith(str(work / "src" / ".nox")) for m in ("mmcv", "dali", "cv2"))
    locks = work / "wheelhouse" / "locks"
    locked = {
        **read_lock(next(locks.glob("gpu-stack-cp*.txt"))),
        **read_lock(next(locks.glob("gpu-stack-nodeps-*"))),
    }
    assert {n: facts["versions"].get(n) for n in locked} == {n: v for n, (v, _) in locked.items()}
    assert facts["versions"]["mmcv-full"] == "1.6.0" and "opencv-python" not in facts["versions"]
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
