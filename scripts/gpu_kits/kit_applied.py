"""The applied upstream tree for the stack kit: ``apply`` runs here (real git, zero fuzz, zero offset)
and the kit carries its result with the digest of every file, because a bare node may have no git.

``apply`` first (a no-op when current; local edits in the checkout are refused, never packed), then
every file of each target's checkout that git tracks at the pin or that ``apply`` wrote (its stamp),
in one byte-stable tar.gz, and the facts: each pin's commit, ``apply``'s digest of pin + series +
overlay, and the sha256 of every file (the node checks the unpacked tree against them).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

from gpukit import sha256

from .kit_sources import ROOT

APPLIED_ARCHIVE = "streampetr-dali-applied-tree.tar.gz"
APPLIED_FACTS = "streampetr-dali-applied-tree.json"


def applied_tree(dest: Path, facts_dest: Path, root: Path = ROOT) -> dict:
    """``dest`` (tar.gz of every target's applied checkout, paths from the repository root) and
    ``facts_dest`` (JSON: pins, apply digests, files -> sha256); returns the facts."""
    from overlaytool import applied_files, load_targets

    targets = load_targets(root)
    applied = applied_files(targets)  # refuses local edits; a no-op when the checkout is current
    facts: dict = {"pins": {}, "apply_digest": {}, "files": {}}
    entries: list[tuple[str, Path]] = []
    for target in targets:
        facts["pins"][target.name] = target.pin.commit
        facts["apply_digest"][target.name], files = applied[target.name]
        for rel in files:
            path = target.checkout / rel
            entries.append((str(path.relative_to(root)), path))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in sorted(set(entries)):
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = 0, 0o755 if path.stat().st_mode & 0o111 else 0o644
            if path.is_symlink():
                info.type, info.linkname = tarfile.SYMTYPE, str(path.readlink())
                tar.addfile(info)
                facts["files"][name] = "symlink:" + info.linkname
                continue
            data = path.read_bytes()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            facts["files"][name] = sha256(path)
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    facts_dest.write_text(json.dumps(facts, indent=0, sort_keys=True) + "\n")
    return facts
