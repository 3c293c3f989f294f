"""Make the GPU check kit inside a wheelhouse: ``<wheelhouse>/gpu-kit/`` (``nox -s gpu_kits``).

The kit is ``gpu_check.py`` (``gpukit.launcher``) with the runner's modules in ``gpukit/`` (stdlib
only: :data:`RUNNER_MODULES`), ``manifest.json`` and ``parts/``: the kit's wheels with a hash-pinned
lock per Python (:func:`collect_kit`) and the project's sources the check runs (:func:`source_archive`),
each file cut into parts of at most ``max_part_bytes`` with the sha256 of every part and of every
whole file, so the folder can travel over channels that limit file size. The stack kit's applied
tree (:func:`applied_tree`) is written here too.
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

import gpukit
from gpukit import FORMAT, MANIFEST, sha256
from overlaytool import REPO_ROOT as ROOT
from upstream_env import NodeTorch
from wheelhouse import Wheelhouse

MiB = 2**20
# What the kit runs before its venv exists: stdlib only, copied whole into <kit>/gpukit/.
RUNNER_MODULES = ("__init__.py", "steps.py", "parts.py", "node.py", "runner.py", "stack.py")
# overlaytool (stdlib only): the repository root and the house writer of synthdata and loaderbench
SOURCES = ("pyproject.toml", "overlay/dali_streampetr", "scripts/synthdata", "scripts/loaderbench",
           "scripts/overlaytool", "scripts/gpukit", "tests/gpu", "tests/float_tolerance.py")  # fmt: skip
SOURCE_ARCHIVE = "streampetr-dali-gpu-check-src.tar.gz"
APPLIED_ARCHIVE = "streampetr-dali-applied-tree.tar.gz"
APPLIED_FACTS = "streampetr-dali-applied-tree.json"
KIT_REQUIREMENTS = ROOT / "requirements" / "gpu-kit.txt"
KIT_CONSTRAINTS = ROOT / "constraints" / "hermetic.txt"
# Wheels a node of any glibc >= 2.17 (manylinux2014) to 2.28 can install.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64",
             "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")  # fmt: skip


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


def source_files(root: Path = ROOT, sources: tuple[str, ...] = SOURCES) -> list[str]:
    """The files of ``sources`` git knows or would add (the working tree's, edits included)."""
    proc = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "--", *sources],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode == 0 and proc.stdout.strip():
        return sorted(f for f in proc.stdout.splitlines() if (root / f).is_file())
    found = [p for s in sources for p in ([root / s] if (root / s).is_file() else (root / s).rglob("*"))]
    return sorted(str(p.relative_to(root)) for p in found if p.is_file() and "__pycache__" not in p.parts)


def _stable_tar(dest: Path, entries: list[tuple[str, Path]], modes: bool = False) -> dict[str, str]:
    """``dest``: a byte-stable tar.gz of ``entries`` (name, path), sorted, mtime 0, no owners; mode
    0644, or with ``modes`` 0755 for executables and symlinks kept. Each name's sha256 (or
    ``symlink:<target>``)."""
    buf, digests = io.BytesIO(), {}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in sorted(set(entries)):
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = 0, 0o755 if modes and path.stat().st_mode & 0o111 else 0o644
            if modes and path.is_symlink():
                info.type, info.linkname = tarfile.SYMTYPE, str(path.readlink())
                tar.addfile(info)
                digests[name] = "symlink:" + info.linkname
                continue
            data = path.read_bytes()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            digests[name] = sha256(path)
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return digests


def source_archive(dest: Path, root: Path = ROOT, sources: tuple[str, ...] = SOURCES) -> Path:
    """A byte-stable tar.gz of :func:`source_files` (sorted, mtime 0, no owners)."""
    _stable_tar(dest, [(name, root / name) for name in source_files(root, sources)])
    return dest


def applied_tree(dest: Path, facts_dest: Path, root: Path = ROOT) -> dict:
    """The stack kit's applied upstream tree (a bare node may have no git): ``apply`` first (a no-op
    when current; local edits are refused), then ``dest`` (tar.gz of every file of each target's
    checkout that git tracks at the pin or ``apply`` wrote, paths from the repository root) and
    ``facts_dest`` (JSON: pins, apply digests, files -> sha256, checked on the node); the facts."""
    from overlaytool import applied_files, load_targets

    targets = load_targets(root)
    applied = applied_files(targets)  # refuses local edits; a no-op when the checkout is current
    facts: dict = {"pins": {}, "apply_digest": {}, "files": {}}
    entries: list[tuple[str, Path]] = []
    for target in targets:
        facts["pins"][target.name] = target.pin.commit
        facts["apply_digest"][target.name], files = applied[target.name]
        entries += [(str((target.checkout / rel).relative_to(root)), target.checkout / rel) for rel in files]
    facts["files"] = _stable_tar(dest, entries, modes=True)
    facts_dest.write_text(json.dumps(facts, indent=0, sort_keys=True) + "\n")
    return facts


def kit_requirements(cuda: int, dest: Path) -> Path:
    """``requirements/gpu-kit.txt`` with the DALI build of CUDA major ``cuda``, written to ``dest``."""
    text = NodeTorch(cuda).with_dali(KIT_REQUIREMENTS.read_text())  # the kit's venv is on the node's torch
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
        args = [*target(version), "--only-binary=:all:", "-c", KIT_CONSTRAINTS, "-r", req]
        what = f"collecting the kit's wheels for Python {version}"
        house.pip(["download", "-q", "-d", house.folder, *args], what)
        header = f"The GPU check kit's venv on CPython {version} (DALI for CUDA {cuda}), hash-pinned."
        what = f"resolving the kit for Python {version}"
        with tempfile.TemporaryDirectory(prefix="gpu-kit-target-") as tmp:  # --python-version needs one
            entries = house.lock(f"gpu-kit-{tag}.txt", [*args, "--target", tmp], what, header)
        locks[tag] = [e.file for e in entries]
    return locks
