"""The node's python and torch, and the kit's venv on top of them: the kit's wheels installed with
the index disabled, the node's torch reused through a ``.pth`` file (stdlib only).

The probe and the ``.pth`` file are also the env builder's (``upstream_env`` on ``--torch-from``):
one way to ask a python about its torch, one way to put that torch on a venv's path.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .steps import CheckError, run

PROBE = (
    "import json, sys, sysconfig, torch; from pathlib import Path; "
    "cuda = torch.cuda.is_available(); print(json.dumps({"
    "'tag': 'cp%d%d' % sys.version_info[:2], 'torch': torch.__version__, 'torch_cuda': torch.version.cuda, "
    "'cuda_available': cuda, 'devices': torch.cuda.device_count() if cuda else 0, "
    "'gpu': torch.cuda.get_device_name(0) if cuda else None, "
    "'torch_site': str(Path(torch.__file__).absolute().parents[1])}))"
)  # torch_site: the folder torch is imported from, links kept (not the folder a link farm points to)
# A CUDA torch reaches a GPU only through the NVIDIA driver's device files (/dev/nvidiactl beside
# /dev/nvidia<N>; /dev/dxg under WSL 2). Where there is none, the probe reads torch's version file
# (the same fields, no GPU) instead of importing torch: 0.1 s against 3-4 s on 2 cores, asked twice
# by each session that runs from the upstream env.
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/dxg")
PROBE_WITHOUT_GPU = """
import importlib.util, json, runpy, sys
from pathlib import Path
spec = importlib.util.find_spec("torch")
if spec is None or not spec.origin:
    raise SystemExit("ModuleNotFoundError: No module named 'torch'")
init = Path(spec.origin).absolute()
version = runpy.run_path(str(init.parent / "version.py"))
print(json.dumps({
    "tag": "cp%d%d" % sys.version_info[:2], "torch": version["__version__"], "torch_cuda": version["cuda"],
    "cuda_available": False, "devices": 0, "gpu": None, "torch_site": str(init.parents[1]),
}))
"""
NODE_TORCH_PTH = "_node_torch.pth"
VENV_CHECK = (
    "import json, sys, numpy, torch, nvidia.dali as dali, PIL; print(json.dumps({"
    "'numpy': numpy.__version__, 'numpy_file': numpy.__file__, 'dali': dali.__version__, "
    "'dali_file': dali.__file__, 'torch': torch.__version__, 'torch_file': torch.__file__, "
    "'cuda_available': torch.cuda.is_available(), "
    "'cuda_tensor': bool(torch.cuda.is_available() and torch.ones(2, device='cuda').sum().item() == 2)}))"
)


def clean_pip_env(base: dict[str, str]) -> dict[str, str]:
    """The environment for pip: no PIP_* settings or pip config of the machine, the index disabled."""
    env = {k: v for k, v in base.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def probe(python: str | Path, link_into: Path | None = None) -> dict:
    """A python's tag and torch: torch and CUDA versions, devices, torch's site folder; with
    ``link_into`` (a venv's purelib), that torch put on the venv's path too (:func:`link_torch`).
    On a host without a GPU device file torch is not imported (:data:`GPU_DEVICE_FILES`)."""
    code = PROBE if any(map(os.path.exists, GPU_DEVICE_FILES)) else PROBE_WITHOUT_GPU
    out = run([python, "-c", code], what=f"{python}: import torch")
    node = json.loads(out.strip().splitlines()[-1])
    if link_into is not None:
        link_torch(link_into, node["torch_site"])
    return node


def link_torch(purelib: Path, torch_site: str) -> Path:
    """The ``.pth`` file in a venv's ``purelib`` that puts ``torch_site`` (the node's torch, with
    whatever lies beside it) on its path, behind the venv's own packages."""
    pth = purelib / NODE_TORCH_PTH
    pth.write_text(torch_site + "\n")
    return pth


def make_venv(python: str, venv: Path, wheels: Path, lock: Path, torch_site: str) -> dict:
    """The kit's venv: the lock installed from ``wheels`` only, then a .pth to the node's torch."""
    if venv.exists():
        shutil.rmtree(venv)
    run([python, "-m", "venv", venv], what="python -m venv (Debian/Ubuntu: the python3-venv package)")
    vpy = venv / "bin" / "python"
    pip = [vpy, "-m", "pip", "install", "-q", "--no-compile", "--no-index", "--find-links", wheels]
    pip.append("--require-hashes")
    run([*pip, "-r", lock], env=clean_pip_env(dict(os.environ)), what=f"pip install -r {lock.name} (offline)")
    purelib = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], what="venv paths")
    link_torch(Path(purelib.strip().splitlines()[-1]), torch_site)
    info = json.loads(run([vpy, "-c", VENV_CHECK], what="import check in the venv").strip().splitlines()[-1])
    for name in ("numpy_file", "dali_file"):
        if not Path(info[name]).resolve().is_relative_to(venv.resolve()):
            raise CheckError(f"venv: {name.split('_')[0]} comes from {info[name]}, not from the kit's venv")
    return info
