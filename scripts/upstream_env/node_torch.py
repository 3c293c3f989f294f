"""`--torch-from PYTHON`: the OpenMMLab env on a node's own CUDA torch.

The env's python sees the node's torch through a `.pth` file (its site folder, behind the env's own
packages); the requirement and constraint files are applied without the lines that pin torch and
its CUDA wheels, with the DALI build of the node torch's CUDA major, and without mmcv-full, which
the builder then installs `--no-deps` beside its other requirements (`MMCV_RUNTIME`): its metadata
asks for `opencv-python`, whose `cv2` the env already has from `opencv-python-headless` (the GUI
calls it adds are never made), so a node is spared that 61 MiB wheel. The stack kit carries exactly
what these files resolve to (`gpu_kits.stack_wheels`), so the node resolves them offline.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from interpreter import install_command

from .cuda_toolkit import CUOBJDUMP
from .errors import EnvBuildError
from .mmcv_wheel import BUILD_PREREQS
from .paths import CONSTRAINTS, REQUIREMENTS
from .runlog import BuildLog

# What the node brings: torch with its CUDA wheels (torch's own nvidia-* lines; DALI's CUDA 12
# wheels, `-cu12`, are not torch's and stay pinned).
NODE_TORCH = ("torch", "torchvision", "triton", "cuda-toolkit")
DALI = {12: "nvidia-dali-cuda120", 13: "nvidia-dali-cuda130"}  # the DALI build of each CUDA major
# mmcv-full 1.6.0's install_requires (its setup.py) but opencv-python (see above); numpy and Pillow
# are requirements of the env already.
MMCV_RUNTIME = ("addict", "packaging", "pyyaml", "yapf")
MMCV = "mmcv-full"
TORCH_FROM_DIR = ".torch-from"


def normalise(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(line: str) -> str | None:
    """The PEP 503 name a requirement or constraint line names; None for blank, comment and option
    lines (the one reader of such lines: the stack kit's and the wheelhouse's too)."""
    spec = line.split("#", 1)[0].strip()
    if not spec or spec.startswith("-"):
        return None
    return normalise(re.split(r"[=<>!~\[; ]", spec, maxsplit=1)[0])


def read_pins(constraints: Path) -> dict[str, str]:
    """normalised name -> version of the ``name==version`` lines of a constraint, requirement or lock file."""
    pins = {}
    for line in constraints.read_text().splitlines():
        spec = line.split("#", 1)[0].strip()
        if "==" in spec and (name := requirement_name(spec)):
            pins[name] = spec.partition("==")[2].split(";")[0].split(" --hash=")[0].strip()
    return pins


def _torchs(name: str) -> bool:
    """torch, what pins it, and torch's own nvidia-* wheels (not DALI's: `nvidia-dali-*`, `*-cu12`)."""
    cuda_wheel = name.startswith("nvidia-") and "dali" not in name and not name.endswith("-cu12")
    return name in NODE_TORCH or cuda_wheel


def without_node_torch(text: str) -> str:
    """A constraints or requirements file without the lines pinning torch, torchvision, triton,
    cuda-toolkit and torch's own nvidia-* CUDA wheels (the node's torch brings its own)."""
    kept = [line for line in text.splitlines() if not _torchs(requirement_name(line) or "")]
    return "\n".join(kept) + "\n"


def with_dali(text: str, cuda_major: int) -> str:
    """A requirement file pinning DALI's CUDA 12 build, with the build of `cuda_major` instead."""
    if cuda_major not in DALI:
        raise EnvBuildError(f"CUDA {cuda_major}: DALI builds exist for CUDA {sorted(DALI)}")
    return text.replace(f"{DALI[12]}==", f"{DALI[cuda_major]}==")


def node_requirements(text: str, cuda_major: int) -> str:
    """`requirements/upstream.txt` for a node whose torch is built for CUDA `cuda_major`: without
    what the node brings and without mmcv-full (installed `--no-deps`), with mmcv's other runtime
    requirements and the DALI build of that CUDA major."""
    kept = [line for line in without_node_torch(text).splitlines() if requirement_name(line) != MMCV]
    lines = with_dali("\n".join(kept), cuda_major).splitlines()
    named = {requirement_name(line) for line in lines}
    mmcv_needs = [name for name in MMCV_RUNTIME if name not in named]
    comment = "# mmcv-full's own requirements (it is installed --no-deps)"
    return "\n".join([*lines, comment, *mmcv_needs]) + "\n"


@dataclass(frozen=True)
class NodeTorch:
    """What `--torch-from` installs on a node whose torch is built for CUDA major `cuda`: the one
    account of it, for the builder and for the kits that carry it (`gpu_kits.stack_wheels`, the
    GPU kit's DALI)."""

    cuda: int
    # what `upstream_env mmcv-wheel --torch-from` installs before it compiles: mmcv-full's build
    # prerequisites but what the node brings
    prerequisites: ClassVar[tuple[str, ...]] = tuple(p for p in BUILD_PREREQS if p not in NODE_TORCH)
    cuobjdump: ClassVar[str] = CUOBJDUMP  # the toolkit's wheel that checks the cubins (a node without it)

    def requirements(self) -> str:
        """`requirements/upstream.txt` for the node (`node_requirements`)."""
        return node_requirements(REQUIREMENTS.read_text(), self.cuda)

    def constraints(self) -> str:
        """`constraints/upstream.txt` without the lines pinning what the node's torch brings."""
        return without_node_torch(CONSTRAINTS.read_text())

    def with_dali(self, text: str) -> str:
        """A requirement file pinning DALI's CUDA 12 build, with DALI's build of the node's CUDA."""
        return with_dali(text, self.cuda)


def torchvision_for(torch_version: str) -> str:
    """The torchvision release series of a torch 2.x release (2.11 -> 0.26.*)."""
    major, minor = (int(p) for p in torch_version.split("+")[0].split(".")[:2])
    if major != 2:
        raise EnvBuildError(f"--torch-from: torch {torch_version}: only torch 2.x has a known torchvision")
    return f"0.{minor + 15}.*"


def dali_major(node: dict) -> int:
    """The CUDA major of the node's torch (a CPU build of torch: 12, the env's pinned DALI build)."""
    return int(node["torch_cuda"].split(".")[0]) if node["torch_cuda"] else 12


def prepare(env: Path, python: Path, node: dict, log: BuildLog) -> tuple[Path, Path]:
    """Torchvision from the wheelhouse when the node has none (its torch is on the env's path: the
    probe put it there); the requirement and constraint files for the node (written into the env)."""
    folder = env / TORCH_FROM_DIR
    folder.mkdir(exist_ok=True)
    constraints, requirements = folder / "constraints.txt", folder / "requirements.txt"
    files = NodeTorch(dali_major(node))
    constraints.write_text(files.constraints())
    requirements.write_text(files.requirements())
    has_tv = subprocess.run([str(python), "-c", "import torchvision"], capture_output=True).returncode == 0
    log.say(f"      torch {node['torch']} (CUDA {node['torch_cuda']}) of the node; has torchvision: {has_tv}")
    if not has_tv:
        wanted = f"torchvision=={torchvision_for(node['torch'])}"
        log.run(install_command(python, "--no-deps", wanted), what="pip install torchvision")
    return constraints, requirements
