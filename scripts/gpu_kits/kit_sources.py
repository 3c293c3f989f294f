"""The project's sources the kit's check runs: the files git knows under :data:`SOURCES`, in a
byte-stable archive."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT

# overlaytool (stdlib only): the repository root and the house writer of synthdata and loaderbench
SOURCES = ("pyproject.toml", "overlay/dali_streampetr", "scripts/synthdata", "scripts/loaderbench",
           "scripts/overlaytool", "scripts/gpukit", "tests/gpu", "tests/float_tolerance.py")  # fmt: skip
SOURCE_ARCHIVE = "streampetr-dali-gpu-check-src.tar.gz"


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


def source_archive(dest: Path, root: Path = ROOT, sources: tuple[str, ...] = SOURCES) -> Path:
    """A byte-stable tar.gz of :func:`source_files` (sorted, mtime 0, no owners)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in source_files(root, sources):
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return dest
