"""Make the GPU check kit inside a wheelhouse: ``<wheelhouse>/gpu-kit/`` (``nox -s gpu_kits``).

The kit is ``gpu_check.py`` (``gpukit.launcher``) with the runner's modules in ``gpukit/`` (stdlib
only: :data:`RUNNER_MODULES`), ``manifest.json`` and ``parts/``: the kit's wheels and locks
(:mod:`.kit_wheels`) and the project's sources the check runs (:mod:`.kit_sources`), each file cut
into parts of at most ``max_part_bytes`` with the sha256 of every part and of every whole file, so
the folder can travel over channels that limit file size.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import gpukit
from gpukit import FORMAT, MANIFEST, sha256

from .kit_sources import SOURCE_ARCHIVE, source_archive

MiB = 2**20
# What the kit runs before its venv exists: stdlib only, copied whole into <kit>/gpukit/.
RUNNER_MODULES = ("__init__.py", "steps.py", "parts.py", "node.py", "runner.py", "stack.py")


def split(path: Path, parts_dir: Path, max_part_bytes: int) -> dict:
    """Cut ``path`` into ``<name>.000``, ``.001``, ... of at most ``max_part_bytes``; its manifest entry.
    A file that fits in one part becomes that part as a hard link where the file system allows."""
    digest, size = sha256(path), path.stat().st_size
    if size <= max_part_bytes:
        part = parts_dir / f"{path.name}.000"
        try:
            os.link(path, part)
        except OSError:
            shutil.copyfile(path, part)
        return {"name": path.name, "size": size, "sha256": digest,
                "parts": [{"name": part.name, "size": size, "sha256": digest}]}  # fmt: skip
    parts = []
    with path.open("rb") as fh:
        while chunk := fh.read(max_part_bytes):
            part = parts_dir / f"{path.name}.{len(parts):03d}"
            part.write_bytes(chunk)
            parts.append({"name": part.name, "size": len(chunk), "sha256": sha256(part)})
    return {"name": path.name, "size": size, "sha256": digest, "parts": parts}


def build_kit(out: Path, locks: dict[str, list[str]], cuda: int, max_part_bytes: int = 60 * MiB) -> Path:
    """``out/gpu-kit``: the runner, the manifest and the parts of every file the check needs."""
    kit = out / "gpu-kit"
    shutil.rmtree(kit, ignore_errors=True)
    parts_dir = kit / "parts"
    parts_dir.mkdir(parents=True)
    wheels = sorted({w for names in locks.values() for w in names})
    lock_names = {tag: f"gpu-kit-{tag}.txt" for tag in locks}
    archive = source_archive(kit / SOURCE_ARCHIVE)
    files = [out / w for w in wheels] + [out / "locks" / n for n in lock_names.values()] + [archive]
    entries = [split(f, parts_dir, max_part_bytes) for f in files]
    archive.unlink()
    manifest = {
        "format": FORMAT, "dali_cuda": cuda, "max_part_bytes": max_part_bytes, "parts_dir": "parts",
        "locks": lock_names, "source": SOURCE_ARCHIVE, "files": entries,
    }  # fmt: skip
    (kit / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    install_runner(kit)
    return kit


def install_runner(kit: Path) -> Path:
    """``<kit>/gpu_check.py`` (the launcher) and the runner's modules under ``<kit>/gpukit/``."""
    here = Path(gpukit.__file__).resolve().parent
    (kit / "gpukit").mkdir(parents=True, exist_ok=True)
    for name in RUNNER_MODULES:
        shutil.copy2(here / name, kit / "gpukit" / name)
    shutil.copy2(here / "launcher.py", kit / "gpu_check.py")
    return kit / "gpu_check.py"


def kit_size(kit: Path) -> tuple[int, int]:
    """(number of files, bytes) of a kit folder."""
    files = [p for p in kit.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)
