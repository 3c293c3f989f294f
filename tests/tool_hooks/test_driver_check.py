"""The driver and runtime check (overlay/tools/tool_hooks/driver_check.py) that tools/train.py and
tools/test.py run first: the driver's answers in the shapes real drivers give them, each refusal beside the
host that differs in the one fact it is about and passes, and the ctypes probe against a stand-in
libcuda.so.1 (the CLI with this env's real torch)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from driver_fakes import MODULE, build_fake_libcuda, driver_env, load_driver_check

PROC_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n"
)
PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 07:09:22 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) \n"
)
SMI_580 = """Tue Oct 28 10:12:44 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.03             Driver Version: 580.159.03     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:00:05.0 Off |                    0 |
"""
SMI_470 = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.199.02   Driver Version: 470.199.02   CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
"""
SMI_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
    "latest NVIDIA driver is installed and running.\n"
)


@pytest.fixture(scope="module")
def cc() -> ModuleType:
    return load_driver_check()


def driver(cc, version: str | None, cuda: tuple[int, int] | None, devices: int | None = 1, error=None):
    return cc.Driver(version=version, cuda=cuda, devices=devices, libcuda_error=error)


H200 = ("580.159.03", (13, 0))  # the lent node's driver (docs/gpu.md)
OLD_12 = ("535.104.05", (12, 2))
OLD_11 = ("470.199.02", (11, 4))
TORCH_CU130 = ("2.14.1+cu130", "13.0")


def test_the_drivers_answers_are_read_in_their_real_shapes(cc) -> None:
    assert cc.parse_proc_version(PROC_PROPRIETARY) == "535.104.05"
    assert cc.parse_proc_version(PROC_OPEN) == "580.65.06"
    assert cc.parse_proc_version("GCC version: gcc version 12.2.0\n") is None
    assert cc.parse_nvidia_smi(SMI_580) == ("580.159.03", (13, 0))
    assert cc.parse_nvidia_smi(SMI_470) == ("470.199.02", (11, 4))
    assert cc.parse_nvidia_smi(SMI_FAILED) == (None, None)


@pytest.mark.parametrize(
    ("version", "major", "runs"),
    [
        ("580.65.06", 13, True), ("575.57.08", 13, False), ("575.57.08", 12, True),
        ("525.60.13", 12, True), ("525.60.11", 12, False), ("525.85", 12, True), ("450.80.02", 11, True),
        ("450.51.06", 11, False),
    ],
)  # fmt: skip
def test_a_driver_known_by_version_alone_runs_the_cuda_majors_of_nvidias_table(cc, version, major, runs):
    assert cc.supports(driver(cc, version, None), major) is runs


def test_the_lent_node_trains_on_its_gpu(cc) -> None:
    dali = ("nvidia-dali-cuda130", "2.4.0", 13)
    verdict = cc.decide(driver(cc, *H200), cc.Runtime("2.11.0+cu130", "13.0", True, dali))
    assert (
        verdict
        == "GPU: driver 580.159.03 (CUDA 13.0), torch 2.11.0+cu130 (CUDA 13.0), nvidia-dali-cuda130 2.4.0"
    )


@pytest.mark.parametrize(("old", "index"), [(OLD_12, "whl/cu126"), (OLD_11, "whl/cu118")])
def test_a_driver_too_old_for_torch_is_refused_with_the_driver_needed_and_the_torch_that_fits(
    cc, old, index
) -> None:
    runtime = cc.Runtime(*TORCH_CU130, torch_sees_gpu=False)
    with pytest.raises(cc.CudaMismatchError) as refused:
        cc.decide(driver(cc, *old), runtime)
    message = str(refused.value)
    assert f"driver {old[0]} (CUDA {old[1][0]}.{old[1][1]})" in message
    assert "needs a driver >= 580.65.06" in message and index in message
    assert "pip install torch==2.14.1 torchvision --index-url" in message and "--torch-from" in message
    assert "CUDA_VISIBLE_DEVICES=" in message
    # the same torch on the same node with the GPUs hidden on purpose, or with no GPU: the CPU
    assert cc.decide(driver(cc, *old), runtime, hidden=True).startswith("CPU: the GPUs are hidden")
    assert cc.decide(driver(cc, *old[:1], old[1], devices=0), runtime).startswith("CPU: no NVIDIA GPU")


def test_a_node_without_a_driver_runs_on_the_cpu(cc) -> None:
    verdict = cc.decide(cc.Driver(), cc.Runtime(*TORCH_CU130, torch_sees_gpu=False))
    assert verdict == "CPU: no NVIDIA GPU on this host (no NVIDIA driver)"


def test_a_cpu_only_torch_on_a_gpu_node_is_refused(cc) -> None:
    with pytest.raises(cc.CudaMismatchError, match=r"torch 2\.13\.0\+cpu is a CPU-only build"):
        cc.decide(driver(cc, *H200), cc.Runtime("2.13.0+cpu", None, False))
    assert cc.decide(driver(cc, *H200, devices=0), cc.Runtime("2.13.0+cpu", None, False)).startswith("CPU:")


def test_a_kernel_driver_without_its_cuda_library_is_refused(cc) -> None:
    """/proc/driver/nvidia/version is there, libcuda.so.1 does not load (a container started without
    the NVIDIA toolkit): the CUDA library is named, not the CPU taken."""
    broken = driver(cc, "580.159.03", None, devices=None, error="libcuda.so.1 does not load (not found)")
    with pytest.raises(cc.CudaMismatchError, match=r"libcuda\.so\.1 does not load .*--gpus all"):
        cc.decide(broken, cc.Runtime(*TORCH_CU130, torch_sees_gpu=False))
    failing = driver(cc, *H200, devices=1, error="cuInit failed with CUDA_ERROR_UNKNOWN (999)")
    with pytest.raises(cc.CudaMismatchError, match=r"CUDA_ERROR_UNKNOWN \(999\)"):
        cc.decide(failing, cc.Runtime(*TORCH_CU130, torch_sees_gpu=False))


def test_torch_blind_to_a_driver_that_runs_it_is_refused_not_worked_around(cc) -> None:
    with pytest.raises(
        cc.CudaMismatchError, match=r"which runs torch's CUDA 13\.0, yet torch .* sees no GPU"
    ):
        cc.decide(driver(cc, *H200), cc.Runtime(*TORCH_CU130, torch_sees_gpu=False))
    assert cc.decide(driver(cc, *H200), cc.Runtime(*TORCH_CU130, torch_sees_gpu=True)).startswith("GPU:")


def test_a_dali_build_newer_than_the_driver_is_refused_naming_the_build_that_fits(cc) -> None:
    """torch cu126 runs on a CUDA 12.2 driver; DALI for CUDA 13 does not: refused with the
    DALI build of the driver's major. DALI for CUDA 12 on the same node passes."""
    cu126 = ("2.14.1+cu126", "12.6", True)
    with pytest.raises(
        cc.CudaMismatchError, match=r"nvidia-dali-cuda130 2\.4\.0 needs .*>= 580\.65\.06"
    ) as e:
        cc.decide(driver(cc, *OLD_12), cc.Runtime(*cu126, ("nvidia-dali-cuda130", "2.4.0", 13)))
    assert "nvidia-dali-cuda120==2.4.0" in str(e.value)
    ok = cc.decide(driver(cc, *OLD_12), cc.Runtime(*cu126, ("nvidia-dali-cuda120", "2.4.0", 12)))
    assert ok.startswith("GPU: driver 535.104.05 (CUDA 12.2)")


@pytest.mark.parametrize(
    ("value", "hidden"), [("", True), (" ", True), ("-1", True), ("-1,0", True), ("0", False), ("1,0", False)]
)
def test_gpus_hidden_on_purpose(cc, value: str, hidden: bool) -> None:
    assert cc.gpus_hidden({"CUDA_VISIBLE_DEVICES": value}) is hidden
    assert cc.gpus_hidden({}) is False


PROBE = f"import json, runpy; print(json.dumps(runpy.run_path({str(MODULE)!r})['probe_libcuda']()))"


@pytest.mark.parametrize(
    ("answers", "probed"),
    [
        ((13000, 1, 0), [[13, 0], 1, None]),
        ((12020, 2, 0), [[12, 2], 2, None]),
        ((13000, 0, 100), [[13, 0], 0, None]),  # CUDA_ERROR_NO_DEVICE: the driver sees no GPU
        ((13000, 0, 999), [[13, 0], 1, "cuInit failed with CUDA_ERROR_UNKNOWN (999)"]),
    ],
)
def test_the_ctypes_probe_reads_libcuda(tmp_path: Path, answers, probed) -> None:
    lib = build_fake_libcuda(tmp_path)
    version, devices, cuinit = answers
    env = driver_env(lib, version, devices, cuinit)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == probed


def test_the_cli_refuses_this_envs_cpu_torch_on_a_gpu_node_and_runs_without_one(tmp_path: Path) -> None:
    """``python tools/driver_check.py`` with this env's real torch (the hermetic env's is a CPU build)
    under a driver that reports a GPU: exit 1 and the fix; no GPU, or GPUs hidden: exit 0, CPU."""
    lib = build_fake_libcuda(tmp_path)
    cmd = [sys.executable, str(MODULE)]
    torch_is_cpu = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.version.cuda)"], capture_output=True, text=True
    ).stdout.strip() == "None"  # fmt: skip
    if not torch_is_cpu:
        pytest.skip("this interpreter's torch is a CUDA build; the stack test covers that case")
    refused = subprocess.run(cmd, env=driver_env(lib, 13000, 1), capture_output=True, text=True)
    assert refused.returncode == 1 and "is a CPU-only build" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    none = subprocess.run(cmd, env=driver_env(lib, 13000, 0, 100), capture_output=True, text=True)
    assert none.returncode == 0 and "CPU: no NVIDIA GPU on this host (the driver sees no GPU)" in none.stderr
    hidden = subprocess.run(
        cmd, env={**driver_env(lib, 13000, 1), "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True
    )
    assert hidden.returncode == 0 and "CPU: the GPUs are hidden on purpose" in hidden.stderr
