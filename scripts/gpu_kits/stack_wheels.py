"""The stack kit's wheels: the OpenMMLab env for a node that brings its own CUDA torch, for one Python.

Exactly what ``upstream_env build --torch-from`` installs there (``upstream_env.node_torch``): the
node's torch and torchvision are not carried (nor the CUDA libraries torch brings); every other
package of its requirement file is (DALI for the node's CUDA major, mmcv-full's own requirements
but ``opencv-python``: mmcv is compiled there from its sdist and installed ``--no-deps``), at the
versions of its constraints (``constraints/upstream.txt`` without torch's lines), and, installed
without dependencies as the env builder does, ``lyft_dataset_sdk`` and the mmdet3d wheel of the
pin. Packages that exist only as sdists are built here into wheels; only pure ones
(``py3-none-any``) may serve another Python.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from upstream_env import NO_DEPS, NodeTorch, normalise, read_pins
from wheelhouse import Wheelhouse, WheelhouseError

from .kit_folder import ROOT, python_tag, target

CONSTRAINTS = ROOT / "constraints" / "upstream.txt"
NODE_PROVIDES = ("torch", "torchvision")  # the node's own, with the CUDA libraries torch brings
PURE_TAGS = ("py3-none-any.whl", "py2.py3-none-any.whl")


def stack_requirements(cuda: int, dest: Path) -> tuple[Path, Path]:
    """The requirement and constraint files ``upstream_env build --torch-from`` installs on a node
    whose torch is built for CUDA major ``cuda``, written beside ``dest`` (``dest``: the requirements)."""
    node = NodeTorch(cuda)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(node.requirements())
    constraints = dest.with_name(dest.name.replace("requirements", "constraints"))
    constraints.write_text(node.constraints())
    return dest, constraints


def early_names() -> set[str]:
    """What ``upstream_env mmcv-wheel --torch-from`` installs before it compiles: the build
    prerequisites beside torch, with wheel's dependency ``packaging`` (the first bundles carry them)."""
    return {normalise(p) for p in NodeTorch.prerequisites} | {"packaging"}


def resolve_here(house: Wheelhouse, args: list[object], what: str) -> list[tuple[str, str]]:
    """(name, version) of what ``pip install args`` resolves to with the index (sdists allowed)."""
    with tempfile.TemporaryDirectory(prefix="stack-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        house.pip(["install", "--dry-run", "--ignore-installed", "-q", "--report", report, *args], what)
        items = json.loads(report.read_text())["install"]
    return [(i["metadata"]["name"], i["metadata"]["version"]) for i in items]


def fetch_for(house: Wheelhouse, version: str, pins: list[tuple[str, str]], what: str) -> None:
    """Each pin's wheel for CPython ``version`` into the wheelhouse, or its sdist built into a pure wheel."""
    with tempfile.TemporaryDirectory(prefix="stack-fetch-") as tmp:
        got, built = Path(tmp) / "got", Path(tmp) / "built"
        spec = [f"{name}=={ver}" for name, ver in pins]
        house.pip(["download", "-q", "--no-deps", "-d", got, *target(version), *spec], what)
        for sdist in [*got.glob("*.tar.gz"), *got.glob("*.zip")]:
            house.pip(["wheel", "-q", "--no-deps", "-w", built, sdist], f"building {sdist.name}")
        impure = [w.name for w in built.glob("*.whl") if not w.name.endswith(PURE_TAGS)]
        if impure:
            raise WheelhouseError(
                f"{', '.join(impure)}: built from sdists here, not pure: no use on the node"
            )
        for wheel in [*got.glob("*.whl"), *built.glob("*.whl")]:
            shutil.copy2(wheel, house.folder / wheel.name)


def collect_stack(house: Wheelhouse, version: str, cuda: int, torchvision: str | None = None) -> dict:
    """The stack kit's wheels for CPython ``version`` into the wheelhouse; its locks
    ``locks/gpu-stack-<tag>.txt`` (hash-pinned, resolved from the wheelhouse alone for that Python) and
    ``locks/gpu-stack-nodeps-<tag>.txt`` (``--no-deps``: lyft_dataset_sdk, and torchvision when asked
    for a node that lacks it). Returns {"lock": [...], "nodeps": [...]}."""
    tag = python_tag(version)
    req, con = stack_requirements(cuda, house.folder / "locks" / f"gpu-stack-requirements-cu{cuda}.txt")
    pins = resolve_here(house, ["-c", con, "-r", req], "resolving the stack kit's packages")
    fetch_for(house, version, pins, f"collecting the stack kit's wheels for Python {version}")
    nodeps = [(n, read_pins(CONSTRAINTS)[normalise(n)]) for n in NO_DEPS]
    nodeps += [("torchvision", torchvision)] if torchvision else []
    fetch_for(house, version, nodeps, "collecting the stack kit's --no-deps wheels")
    header = f"The OpenMMLab env on a node's own torch, CPython {version}, DALI for CUDA {cuda}, hash-pinned."
    names, free_header = [f"{n}=={v}" for n, v in nodeps], header + " Installed with --no-deps."
    with tempfile.TemporaryDirectory(prefix="stack-target-") as tmp:  # --python-version needs a target
        opts = [*target(version), "--only-binary=:all:", "--target", tmp]
        what = f"resolving the stack for {tag}"
        lock = house.lock(f"gpu-stack-{tag}.txt", [*opts, "-c", con, "-r", req], what, header, CONSTRAINTS)
        args, what = [*opts, "--no-deps", *names], f"resolving the --no-deps wheels for {tag}"
        free = house.lock(f"gpu-stack-nodeps-{tag}.txt", args, what, free_header, CONSTRAINTS, NODE_PROVIDES)
    return {"lock": lock, "nodeps": free}
