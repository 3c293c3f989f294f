"""The stack kit's wheels: the OpenMMLab env for a node that brings its own CUDA torch, for one Python.

What the node has is not carried: its torch and torchvision (and with them every CUDA library torch
needs). What it lacks is: every other package of ``requirements/upstream.txt`` at the versions of
``constraints/upstream.txt`` (DALI for the node's CUDA major), mmcv-full's own requirements (mmcv is
compiled there from its sdist against the node's torch), and, installed without dependencies as the
env builder does, ``lyft_dataset_sdk`` and the mmdet3d wheel of the pin. Packages that exist only as
sdists are built here into wheels; only pure ones (``py3-none-any``) may serve another Python.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from . import WheelhouseError
from .collect import ROOT
from .kit_wheels import DALI, PLATFORMS, python_tag
from .requirement_locks import Locked, check_pins, normalise, read_pins, resolve, run_pip, write_lock

REQUIREMENTS = ROOT / "requirements" / "upstream.txt"
CONSTRAINTS = ROOT / "constraints" / "upstream.txt"
NODE_PROVIDES = ("torch", "torchvision")  # the node's own, with the CUDA libraries torch brings
BUILT_ON_NODE = ("mmcv-full",)  # compiled there against the node's torch, from the carried sdist
# mmcv-full 1.6.0's install_requires (its setup.py) beside numpy and Pillow, which the file pins already
MMCV_RUNTIME = ("addict", "packaging", "pyyaml", "yapf", "opencv-python")
PURE_TAGS = ("py3-none-any.whl", "py2.py3-none-any.whl")
# What mmcv's setup.py needs beside torch (installed with --no-deps): the first bundle carries them
EARLY = ("numpy", "setuptools", "wheel", "ninja", "packaging")


def stack_requirements(cuda: int, dest: Path) -> Path:
    """``requirements/upstream.txt`` without what the node provides or builds, plus mmcv's own needs,
    with the DALI build of CUDA major ``cuda``; written to ``dest``."""
    keep = []
    for line in REQUIREMENTS.read_text().splitlines():
        spec = line.split("#", 1)[0].strip()
        if spec and normalise(spec.split("==")[0].split("[")[0]) in NODE_PROVIDES + BUILT_ON_NODE:
            continue
        keep.append(line.replace(f"{DALI[12]}==", f"{DALI[cuda]}=="))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join([*keep, "# mmcv-full's own requirements (it is compiled on the node)",
                               *MMCV_RUNTIME]) + "\n")  # fmt: skip
    return dest


def target(version: str) -> list[str]:
    """pip's options for wheels of CPython ``version`` on any manylinux x86_64 node."""
    return ["--python-version", version, *(a for p in PLATFORMS for a in ("--platform", p))]


def resolve_here(python: str, args: list[object], what: str) -> list[tuple[str, str]]:
    """(name, version) of what ``pip install args`` resolves to with the index (sdists allowed)."""
    with tempfile.TemporaryDirectory(prefix="stack-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        run_pip(python, ["install", "--dry-run", "--ignore-installed", "-q", "--report", report, *args], what)
        items = json.loads(report.read_text())["install"]
    return [(i["metadata"]["name"], i["metadata"]["version"]) for i in items]


def fetch_for(python: str, out: Path, version: str, pins: list[tuple[str, str]], what: str) -> None:
    """Each pin's wheel for CPython ``version`` into ``out``, or its sdist built here into a pure wheel."""
    with tempfile.TemporaryDirectory(prefix="stack-fetch-") as tmp:
        got, built = Path(tmp) / "got", Path(tmp) / "built"
        spec = [f"{name}=={ver}" for name, ver in pins]
        run_pip(python, ["download", "-q", "--no-deps", "-d", got, *target(version), *spec], what)
        for sdist in [*got.glob("*.tar.gz"), *got.glob("*.zip")]:
            run_pip(python, ["wheel", "-q", "--no-deps", "-w", built, sdist], f"building {sdist.name}")
        impure = [w.name for w in built.glob("*.whl") if not w.name.endswith(PURE_TAGS)]
        if impure:
            raise WheelhouseError(
                f"{', '.join(impure)}: built from sdists here, not pure: no use on the node"
            )
        for wheel in [*got.glob("*.whl"), *built.glob("*.whl")]:
            shutil.copy2(wheel, out / wheel.name)


def collect_stack(python: str, out: Path, version: str, cuda: int, torchvision: str | None = None) -> dict:
    """The stack kit's wheels for CPython ``version`` into ``out``; its locks
    ``locks/gpu-stack-<tag>.txt`` (hash-pinned, resolved from ``out`` alone for that Python) and
    ``locks/gpu-stack-nodeps-<tag>.txt`` (``--no-deps``: lyft_dataset_sdk, and torchvision when asked
    for a node that lacks it). Returns {"lock": [...], "nodeps": [...]}."""
    from upstream_env.build import NO_DEPS

    tag = python_tag(version)
    req = stack_requirements(cuda, out / "locks" / f"gpu-stack-requirements-cu{cuda}.txt")
    pins = resolve_here(python, ["-c", CONSTRAINTS, "-r", req], "resolving the stack kit's packages")
    fetch_for(python, out, version, pins, f"collecting the stack kit's wheels for Python {version}")
    nodeps = [(n, read_pins(CONSTRAINTS)[normalise(n)]) for n in NO_DEPS]
    nodeps += [("torchvision", torchvision)] if torchvision else []
    fetch_for(python, out, version, nodeps, "collecting the stack kit's --no-deps wheels")
    with tempfile.TemporaryDirectory(prefix="stack-target-") as tmp:  # --python-version needs a target
        opts = [*target(version), "--only-binary=:all:", "--target", tmp]
        lock = resolve(python, out, [*opts, "-c", CONSTRAINTS, "-r", req], f"resolving the stack for {tag}")
        names = [f"{n}=={v}" for n, v in nodeps]
        free = resolve(python, out, [*opts, "--no-deps", *names], f"resolving the --no-deps wheels for {tag}")
    node_own = [e for e in free if normalise(e.name) in NODE_PROVIDES]  # the node's version, not the pin
    check_pins(
        [e for e in lock + free if e not in node_own], read_pins(CONSTRAINTS), "constraints/upstream.txt"
    )
    header = f"The OpenMMLab env on a node's own torch, CPython {version}, DALI for CUDA {cuda}, hash-pinned."
    write_lock(out / "locks" / f"gpu-stack-{tag}.txt", lock, out, header)
    write_lock(
        out / "locks" / f"gpu-stack-nodeps-{tag}.txt", free, out, header + " Installed with --no-deps."
    )
    return {"lock": lock, "nodeps": free}


def stack_files(entries: dict) -> list[str]:
    """The wheel file names of both locks."""
    return sorted({e.file for group in entries.values() for e in group if isinstance(e, Locked)})
