"""Make the stack kit: everything a node with only a driver, Python and a CUDA torch lacks to build the
OpenMMLab env on that torch, train, evaluate and benchmark (``gpu_check.py --stack``, docs/gpu.md).

Two sibling folders in the wheelhouse: ``gpu-stack-kit/`` (the runner ``gpu_check.py``, ``gpukit/``
and ``manifest.json``: a few hundred KiB) and ``gpu-stack-parts/bNN/``, the parts in bundles of at
most ``max_part_bytes`` each, so that each bundle travels on its own (a call of a lent machine, a
mail). The first bundles hold what the node needs first: the sources, the applied tree, the locks, the
mmcv-full sdist, mmcv's build prerequisites and the toolkit wheels it may need (``nvidia-cuda-cuobjdump``
always, to check the cubins where the node's toolkit has no cuobjdump; with ``--kit-toolkit`` all of
the CUDA toolkit's, for a node without nvcc), so mmcv can compile while the other bundles travel.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gpukit import FORMAT, MANIFEST
from upstream_env import EnvBuildError, NodeTorch, SourceBuilt, normalise
from wheelhouse import Wheelhouse, WheelhouseError

from .kit_folder import (
    APPLIED_ARCHIVE,
    APPLIED_FACTS,
    ROOT,
    MiB,
    applied_tree,
    install_runner,
    python_tag,
    source_archive,
    split,
)
from .stack_wheels import collect_stack, early_names

KIT, PARTS = "gpu-stack-kit", "gpu-stack-parts"
STACK_SOURCE = "streampetr-dali-stack-src.tar.gz"
# The project's files the node runs: the tooling, the overlay, the pins and the series it was applied
# from (provenance), the GPU tests (tests/gpu imports tests/float_tolerance.py)
STACK_SOURCES = ("pyproject.toml", "scripts", "overlay", "requirements", "constraints", "patches",
                 "upstream/streampetr.toml", "upstream/mmdetection3d.toml", "tests/gpu",
                 "tests/float_tolerance.py")  # fmt: skip


def bundle(entries: list[dict], early: set[str], max_bytes: int) -> int:
    """Give every part a ``bundle`` (``b01``, ``b02``, ...) of at most ``max_bytes``: the parts of the
    ``early`` files first, largest first, each into the first bundle it fits, then the others the
    same way (filling what the early bundles left). Returns how many bundles hold early parts."""
    sizes: list[int] = []

    def place(parts: list[dict]) -> None:
        for part in sorted(parts, key=lambda p: -p["size"]):
            i = next((i for i, size in enumerate(sizes) if size + part["size"] <= max_bytes), len(sizes))
            sizes.extend([0] if i == len(sizes) else [])
            part["bundle"], sizes[i] = f"b{i + 1:02d}", sizes[i] + part["size"]

    place([p for e in entries if e["name"] in early for p in e["parts"]])
    first = len(sizes)
    place([p for e in entries if e["name"] not in early for p in e["parts"]])
    return first


def build_stack_kit(out: Path, version: str, cuda: int, *, max_part_bytes: int = 60 * MiB,
                    cuda_arch: str = "9.0", torchvision: str | None = None,
                    toolkit: bool = False) -> Path:  # fmt: skip
    """``out/gpu-stack-kit`` and ``out/gpu-stack-parts``: see the module docstring. ``toolkit``: carry
    every wheel of the CUDA toolkit's lock (a node without nvcc), not only its cuobjdump."""
    house, tag = Wheelhouse(sys.executable, out), python_tag(version)
    locks = collect_stack(house, version, cuda, torchvision)
    try:  # the mmcv-full sdist and the mmdet3d wheel (no mmcv-full wheel: the node compiles it)
        built = SourceBuilt.for_node(Path(house.python))
    except EnvBuildError as exc:
        raise WheelhouseError(str(exc)) from None
    facts, facts_file = built.facts(), house.add_built(built).name
    toolkit_files = house.add_toolkit(f"cuda-toolkit-{cuda}.*.txt", None if toolkit else NodeTorch.cuobjdump)
    kit, parts_root = out / KIT, out / PARTS
    for folder in (kit, parts_root):
        shutil.rmtree(folder, ignore_errors=True)
    staging = parts_root / "staging"
    staging.mkdir(parents=True)
    sources = source_archive(kit.parent / STACK_SOURCE, sources=STACK_SOURCES)
    tree = applied_tree(out / APPLIED_ARCHIVE, out / APPLIED_FACTS)
    wheels = sorted({e.file for group in locks.values() for e in group})
    extra = [facts["sdist"], facts["mmdet3d"]["file"], *toolkit_files]
    lock_names = [f"gpu-stack-{tag}.txt", f"gpu-stack-nodeps-{tag}.txt", facts_file,
                  f"gpu-stack-requirements-cu{cuda}.txt", f"gpu-stack-constraints-cu{cuda}.txt"]  # fmt: skip
    files = [out / w for w in wheels + extra] + [out / "locks" / n for n in lock_names]
    files += [sources, out / APPLIED_ARCHIVE, out / APPLIED_FACTS]
    entries = [split(f, staging, max_part_bytes) for f in files]
    # what `upstream_env mmcv-wheel` needs: its prerequisites, torchvision for a node without one
    needed_early = early_names() | {"torchvision"}
    early_wheels = {e.file for group in locks.values() for e in group if normalise(e.name) in needed_early}
    early = {e["name"] for e in entries if not e["name"].endswith(".whl")} | early_wheels | set(extra)
    early_bundles = bundle(entries, early, max_part_bytes)
    for entry in entries:
        for part in entry["parts"]:
            (parts_root / part["bundle"]).mkdir(exist_ok=True)
            (staging / part["name"]).replace(parts_root / part["bundle"] / part["name"])
    staging.rmdir()
    sources.unlink()
    manifest = {
        "format": FORMAT, "dali_cuda": cuda, "max_part_bytes": max_part_bytes, "parts_dir": PARTS,
        "parts_beside": True, "locks": {tag: lock_names[0]}, "source": sources.name, "files": entries,
        "stack": {"python": tag, "nodeps": lock_names[1], "source_built": facts_file,
                  "applied": APPLIED_ARCHIVE, "applied_facts": APPLIED_FACTS, "early": sorted(early),
                  "early_bundles": early_bundles, "cuda_arch": cuda_arch, "pins": tree["pins"]},
    }  # fmt: skip
    kit.mkdir(parents=True, exist_ok=True)
    (kit / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    install_runner(kit)
    return kit


def describe(kit: Path) -> str:
    """One line per bundle (its size; the first ones: what mmcv's compile needs) and the total."""
    manifest = json.loads((kit / MANIFEST).read_text())
    sizes: dict[str, int] = {}
    for entry in manifest["files"]:
        for part in entry["parts"]:
            sizes[part["bundle"]] = sizes.get(part["bundle"], 0) + part["size"]
    early = manifest["stack"]["early_bundles"]
    lines = [
        f"  {name}: {size / MiB:.1f} MiB"
        + ("  (mmcv's compile can start once these are there)" * (i == early))
        for i, (name, size) in enumerate(sorted(sizes.items()), start=1)
    ]
    total = sum(sizes.values())
    return "\n".join([*lines, f"  {len(sizes)} bundles, {total / MiB:.0f} MiB"])


def git_ignored(path: Path) -> bool:
    """Whether git ignores ``path`` in this checkout (a lent machine's ``carry`` takes ignored folders)."""
    proc = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(path)], capture_output=True)
    return proc.returncode == 0
