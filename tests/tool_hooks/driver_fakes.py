"""Shared by the driver-check tests: the overlay's ``tools/tool_hooks/driver_check.py`` loaded from
its file (a script too, stdlib only), a stand-in ``libcuda.so.1`` whose answers the environment sets, and a
patched tool of the checkout run until the check stops it (:func:`stopped_tool_output`).

The stand-in exports the three driver calls the check makes (``cuDriverGetVersion``, ``cuInit``,
``cuDeviceGetCount``); a real torch that loads it through ``LD_LIBRARY_PATH`` sees what it sees on a
node with that driver: with ``FAKE_CUDA_DRIVER_VERSION=12020`` a CUDA 13 torch warns "The NVIDIA
driver on your system is too old (found version 12020)" and ``torch.cuda.is_available()`` is False.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

MODULE = Path(__file__).resolve().parents[2] / "overlay" / "tools" / "tool_hooks" / "driver_check.py"
CHECKOUT = Path(__file__).resolve().parents[2] / "upstream" / "StreamPETR"
SMOKE_CONFIG = "projects/configs/dali/stream_petr_r50_cpu_smoke_dali.py"
TOOLS = ("test", "train")
FAKE_SOURCE = r"""
#include <stdlib.h>
static int env(const char *k, int d) { const char *v = getenv(k); return v ? atoi(v) : d; }
int cuDriverGetVersion(int *v) { *v = env("FAKE_CUDA_DRIVER_VERSION", 13000); return 0; }
int cuInit(unsigned int flags) { (void)flags; return env("FAKE_CUINIT_RESULT", 0); }
int cuDeviceGetCount(int *n) { *n = env("FAKE_CUDA_DEVICES", 1); return 0; }
"""


def load_driver_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("driver_check", MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["driver_check"] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def build_fake_libcuda(folder: Path) -> Path:
    """``folder/libcuda.so.1`` compiled from :data:`FAKE_SOURCE` (skips where no C compiler is found)."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in libcuda.so.1 (the project needs one for mmcv)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fake_libcuda.c").write_text(FAKE_SOURCE)
    lib = folder / "libcuda.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, folder / "fake_libcuda.c"], check=True)
    return lib


def driver_env(lib: Path, cuda_version: int, devices: int = 1, cuinit: int = 0) -> dict[str, str]:
    """This environment with the stand-in library first and its answers set."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib.parent), env.get("LD_LIBRARY_PATH")]))
    env.update(FAKE_CUDA_DRIVER_VERSION=str(cuda_version), FAKE_CUDA_DEVICES=str(devices))
    env["FAKE_CUINIT_RESULT"] = str(cuinit)
    return env


def stopped_tool_output(tool: str, work: Path, env: dict[str, str]) -> str:
    """The output of the checkout's patched ``tools/<tool>.py`` (``train``, ``test``) on the CPU smoke
    config with ``env``, checked to have stopped with exit 1 before it trained or evaluated (no
    traceback, no iteration, nothing in the work dir ``work``)."""
    args = {
        "train": ["tools/train.py", SMOKE_CONFIG, "--work-dir", str(work)],
        "test": ["tools/test.py", SMOKE_CONFIG, str(work / "no-checkpoint-needed.pth"), "--eval", "bbox"],
    }[tool]
    proc = subprocess.run(
        [sys.executable, *args], cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "Traceback" not in out and "Iter [" not in out
    assert not work.exists() or not any(work.iterdir())
    return out
