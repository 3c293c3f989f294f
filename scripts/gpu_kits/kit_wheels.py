"""The kit's wheels: those of ``requirements/gpu-kit.txt`` (DALI for the chosen CUDA major) for each
kit Python on any manylinux x86_64 node, and a hash-pinned lock per Python."""

from __future__ import annotations

import tempfile
from pathlib import Path

from upstream_env import NodeTorch
from wheelhouse import Wheelhouse

from .kit_sources import ROOT

REQUIREMENTS = ROOT / "requirements" / "gpu-kit.txt"
CONSTRAINTS = ROOT / "constraints" / "hermetic.txt"
# Wheels a node of any glibc >= 2.17 (manylinux2014) to 2.28 can install.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64",
             "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")  # fmt: skip


def kit_requirements(cuda: int, dest: Path) -> Path:
    """``requirements/gpu-kit.txt`` with the DALI build of CUDA major ``cuda``, written to ``dest``."""
    text = NodeTorch(cuda).with_dali(REQUIREMENTS.read_text())  # the kit's venv is on the node's torch
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def target(version: str) -> list[str]:
    """pip's options for wheels of CPython ``version`` on any manylinux x86_64 node."""
    return ["--python-version", version, *(a for p in PLATFORMS for a in ("--platform", p))]


def python_tag(version: str) -> str:
    major, minor = version.split(".")
    return f"cp{major}{minor}"


def collect_kit(house: Wheelhouse, versions: list[str], cuda: int) -> dict[str, list[str]]:
    """The kit's wheels for each Python ``versions`` (``3.11``) into the wheelhouse, a lock per
    version; the wheels' names per Python tag."""
    req = kit_requirements(cuda, house.folder / "locks" / f"gpu-kit-requirements-cu{cuda}.txt")
    locks = {}
    for version in versions:
        tag = python_tag(version)
        args = [*target(version), "--only-binary=:all:", "-c", CONSTRAINTS, "-r", req]
        what = f"collecting the kit's wheels for Python {version}"
        house.pip(["download", "-q", "-d", house.folder, *args], what)
        header = f"The GPU check kit's venv on CPython {version} (DALI for CUDA {cuda}), hash-pinned."
        what = f"resolving the kit for Python {version}"
        with tempfile.TemporaryDirectory(prefix="gpu-kit-target-") as tmp:  # --python-version needs one
            entries = house.lock(f"gpu-kit-{tag}.txt", [*args, "--target", tmp], what, header)
        locks[tag] = [e.file for e in entries]
    return locks
