"""A series' footprint: the upstream lines each patch adds and removes; a patch adding more than
:data:`ADDED_LIMIT` needs a `Hook-Size-Reason:` header field (docs/patches.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .patchfile import decode

ADDED_LIMIT = 15
REASON_FIELD = "Hook-Size-Reason"


@dataclass(frozen=True)
class Footprint:
    """The upstream lines one patch adds and removes (context lines are not counted)."""

    name: str
    added: int
    removed: int
    reason: str | None  # its Hook-Size-Reason field

    @property
    def changed(self) -> int:
        return self.added + self.removed


def patch_footprint(path: Path) -> Footprint:
    """The footprint of the git format-patch file at `path`."""
    added = removed = 0
    in_hunk = False
    header: list[str] = []
    for line in decode(path.read_bytes()).split("\n"):
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@ "):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
        elif not in_hunk and not added and not removed:
            header.append(line)
    found = re.search(rf"(?m)^{REASON_FIELD}:[ \t]*(\S.*)$", "\n".join(header).split("\ndiff --git ")[0])
    return Footprint(path.name, added, removed, found.group(1).strip() if found else None)


def series_footprint(patch_dir: Path, names: list[str]) -> list[Footprint]:
    """The footprint of each listed patch that exists, in series order."""
    return [patch_footprint(patch_dir / name) for name in names if (patch_dir / name).is_file()]


def footprint_problems(footprints: list[Footprint], patch_dir: Path) -> list[str]:
    """One message per patch adding more than ADDED_LIMIT upstream lines without a reason."""
    return [
        f"{patch_dir / f.name}: adds {f.added} upstream lines, more than a hook's {ADDED_LIMIT}: move "
        f"the logic into the overlay, or say why it cannot be in a '{REASON_FIELD}:' header field"
        for f in footprints
        if f.added > ADDED_LIMIT and not f.reason
    ]


def footprint_table(label: str, footprints: list[Footprint]) -> str:
    """The footprint as printed by the lint: one line per patch, then the series' total."""
    if not footprints:
        return f"{label}: no patches"
    lines = [f"{label}: upstream lines changed per patch (+added -removed)"]
    for f in footprints:
        mark = f"  [over {ADDED_LIMIT}: {f.reason}]" if f.added > ADDED_LIMIT and f.reason else ""
        lines.append(f"  {f.changed:4d}  +{f.added:<3d} -{f.removed:<3d} {f.name}{mark}")
    added, removed = sum(f.added for f in footprints), sum(f.removed for f in footprints)
    lines.append(f"  {added + removed:4d}  +{added:<3d} -{removed:<3d} in all ({len(footprints)} patches)")
    return "\n".join(lines)
