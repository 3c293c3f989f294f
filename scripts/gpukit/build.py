"""Make the GPU check kit inside a wheelhouse: ``<wheelhouse>/gpu-kit/`` (``nox -s wheelhouse``).

The kit is ``gpu_check.py`` (:mod:`.launcher`) with the runner's modules in ``gpukit/`` (stdlib
only: :data:`RUNNER_MODULES`), ``manifest.json`` and ``parts/``: the wheels of
``requirements/gpu-kit.txt`` for each kit Python (any manylinux x86_64 node), their locks and the
project's sources the check runs, each file cut into parts of at most ``max_part_bytes`` with the
sha256 of every part and of every whole file, so the folder can travel over channels that limit
file size.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from wheelhouse.locks import Locked, resolve, run_pip, sha256, write_lock

from .parts import FORMAT, MANIFEST

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements" / "gpu-kit.txt"
CONSTRAINTS = ROOT / "constraints" / "hermetic.txt"
SOURCES = ("pyproject.toml", "overlay/dali_streampetr", "scripts/synthdata", "scripts/loaderbench",
           "scripts/gpukit", "tests/gpu", "tests/float_tolerance.py")  # fmt: skip
SOURCE_ARCHIVE = "streampetr-dali-gpu-check-src.tar.gz"
# Wheels a node of any glibc >= 2.17 (manylinux2014) to 2.28 can install.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64",
             "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")  # fmt: skip
DALI = {12: "nvidia-dali-cuda120", 13: "nvidia-dali-cuda130"}
MiB = 2**20
# What the kit runs before its venv exists: stdlib only, copied whole into <kit>/gpukit/.
RUNNER_MODULES = ("__init__.py", "steps.py", "parts.py", "node.py", "runner.py")


def kit_requirements(cuda: int, dest: Path) -> Path:
    """``requirements/gpu-kit.txt`` with the DALI build of CUDA major ``cuda``, written to ``dest``."""
    if cuda not in DALI:
        raise ValueError(f"--cuda {cuda}: DALI wheels exist for CUDA {sorted(DALI)}")
    text = REQUIREMENTS.read_text().replace(f"{DALI[12]}==", f"{DALI[cuda]}==")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def python_tag(version: str) -> str:
    major, minor = version.split(".")
    return f"cp{major}{minor}"


def collect_kit(python: str, out: Path, versions: list[str], cuda: int) -> dict[str, list[Locked]]:
    """The kit's wheels for each Python ``versions`` (``3.11``) into ``out``, a lock per version."""
    req = kit_requirements(cuda, out / "locks" / f"gpu-kit-requirements-cu{cuda}.txt")
    locks = {}
    for version in versions:
        tag = python_tag(version)
        target = ["--python-version", version, "--only-binary=:all:"]
        target += [arg for p in PLATFORMS for arg in ("--platform", p)]
        what = f"collecting the kit's wheels for Python {version}"
        run_pip(python, ["download", "-q", "-d", out, *target, "-c", CONSTRAINTS, "-r", req], what)
        with tempfile.TemporaryDirectory(prefix="gpu-kit-target-") as tmp:  # --python-version needs one
            with_target = [*target, "--target", tmp, "-c", CONSTRAINTS, "-r", req]
            entries = resolve(python, out, with_target, f"resolving the kit for Python {version}")
        header = f"The GPU check kit's venv on CPython {version} (DALI for CUDA {cuda}), hash-pinned."
        write_lock(out / "locks" / f"gpu-kit-{tag}.txt", entries, out, header)
        locks[tag] = entries
    return locks


def source_files(root: Path = ROOT) -> list[str]:
    """The files of ``SOURCES`` git knows or would add (the working tree's, edits included)."""
    proc = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "--", *SOURCES],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode == 0 and proc.stdout.strip():
        return sorted(f for f in proc.stdout.splitlines() if (root / f).is_file())
    found = [p for s in SOURCES for p in ([root / s] if (root / s).is_file() else (root / s).rglob("*"))]
    return sorted(str(p.relative_to(root)) for p in found if p.is_file() and "__pycache__" not in p.parts)


def source_archive(dest: Path, root: Path = ROOT) -> Path:
    """A byte-stable tar.gz of :func:`source_files` (sorted, mtime 0, no owners)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in source_files(root):
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return dest


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


def build_kit(out: Path, locks: dict[str, list[Locked]], cuda: int, max_part_bytes: int = 60 * MiB) -> Path:
    """``out/gpu-kit``: the runner, the manifest and the parts of every file the check needs."""
    kit = out / "gpu-kit"
    shutil.rmtree(kit, ignore_errors=True)
    parts_dir = kit / "parts"
    parts_dir.mkdir(parents=True)
    wheels = sorted({e.file for entries in locks.values() for e in entries})
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
    here = Path(__file__).resolve().parent
    (kit / "gpukit").mkdir(parents=True, exist_ok=True)
    for name in RUNNER_MODULES:
        shutil.copy2(here / name, kit / "gpukit" / name)
    shutil.copy2(here / "launcher.py", kit / "gpu_check.py")
    return kit / "gpu_check.py"


def kit_size(kit: Path) -> tuple[int, int]:
    """(number of files, bytes) of a kit folder."""
    files = [p for p in kit.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)
