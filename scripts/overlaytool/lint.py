"""The series lint: what `lint` reports and what `apply` refuses before it touches anything, per series
and for `patches/` as a whole (docs/patches.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from .patchfile import parse_patch
from .targets import CONFIG, Target


def series_problems(patch_dir: Path, names: list[str]) -> list[str]:
    """Every problem of the series `names` in `patch_dir`, one message each; empty means clean."""
    problems: list[str] = []
    seen: set[str] = set()
    for name in names:
        where = f"{patch_dir / 'series'}: entry {name!r}"
        if name in seen:
            problems.append(f"{where}: listed twice")
        seen.add(name)
        if Path(name).is_absolute() or ".." in Path(name).parts or "/" in name:
            problems.append(f"{where}: must be a file name inside {patch_dir}")
            continue
        path = patch_dir / name
        if not path.is_file():
            problems.append(f"{where}: file does not exist")
            continue
        problems += _patch_problems(path)
    for extra in sorted(p.name for p in patch_dir.glob("*.patch") if p.name not in seen):
        problems.append(f"{patch_dir / extra}: not listed in {patch_dir / 'series'}")
    return problems


def _patch_problems(path: Path) -> list[str]:
    patch = parse_patch(path)
    problems = []
    if not patch.subject:
        problems.append(f"{path}: no 'Subject:' header")
    if not re.search(r"(?m)^Description:\s*\S", patch.header):
        problems.append(f"{path}: no DEP-3 'Description:' field in the header (say why)")
    if not re.search(r"(?m)^Forwarded:\s*\S", patch.header):
        problems.append(f"{path}: no DEP-3 'Forwarded:' field in the header (e.g. 'Forwarded: not-needed')")
    if patch.filename is not None and patch.filename != path.name:
        problems.append(
            f"{path}: its 'Patch-Filename: {patch.filename}' trailer names another file "
            f"(rename the file, or set the trailer to {path.name})"
        )
    if not patch.files:
        problems.append(f"{path}: contains no diff")
    for fp in patch.files:
        for p in (fp.old_path, fp.new_path):
            if p is not None and (p.startswith("/") or ".." in Path(p).parts or p.startswith(".git/")):
                problems.append(f"{path}: file path {p!r} escapes the upstream tree")
    return problems


def folder_problems(root: Path, targets: list[Target]) -> list[str]:
    """Entries of `patches/` that belong to no target: an unlisted folder, a patch outside every folder."""
    patches = root / CONFIG.parent
    owned = {t.patch_dir.resolve() for t in targets}
    problems = []
    for entry in sorted(patches.iterdir()):
        if (
            entry.is_dir()
            and entry.resolve() not in owned
            and not any(d.is_relative_to(entry.resolve()) for d in owned)
        ):
            problems.append(f"{entry}: no target of {root / CONFIG} names this folder (misspelt?)")
        elif entry.is_file() and entry.name != CONFIG.name:
            problems.append(f"{entry}: outside every target's folder (see {root / CONFIG})")
    return problems
