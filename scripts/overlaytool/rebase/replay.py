"""Replay one patch of the series onto a checkout during a rebase, following upstream's renames: its
status is `already-upstream`, `clean`, `offset`, `merged-3way`, `conflict` or `missing-at-target`
(docs/rebase.md); a conflict settle.py can settle is settled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OverlayError
from ..faults import kill_point
from ..gitcmd import TOOL_IDENTITY, git, tree_files
from ..patchfile import Patch, diagnose_patch
from ..tree.files import current
from .settle import settle
from .state import Stop

RENAME_THRESHOLD = 50  # percent of similarity for git to call a file moved (git's default, -M50%)
CLEAN, OFFSET, MERGED_3WAY, ALREADY_UPSTREAM = "clean", "offset", "merged-3way", "already-upstream"
CONFLICT, MISSING = "conflict", "missing-at-target"
MARKER = re.compile(r"^(<{7}|>{7}|\|{7})( |$)")


@dataclass
class Replayed:
    """What replaying one patch did."""

    status: str
    moves: list[str] = field(default_factory=list)  # "old → new" for each of its files upstream moved
    paths: list[str] = field(default_factory=list)  # the patch's paths at the target (after renames)
    missing: list[str] = field(default_factory=list)  # files it modifies that the target lacks
    settled: list[str] = field(default_factory=list)  # the evidence of each conflict settled without a stop


def renames(checkout: Path, old: str, new: str, threshold: int = RENAME_THRESHOLD) -> dict[str, str]:
    """Files upstream moved between `old` and `new`, old path → new path (git's rename detection)."""
    out = git("diff", f"-M{threshold}%", "--name-status", "-z", "--diff-filter=R", old, new, cwd=checkout)
    fields = [f for f in out.stdout.split("\0") if f]
    return {fields[i + 1]: fields[i + 2] for i in range(0, len(fields) - 2, 3)}


def patch_paths(patch: Patch, moved: dict[str, str]) -> list[str]:
    """Every path the patch touches, where it lives at the target."""
    paths = [moved.get(p, p) for fp in patch.files for p in (fp.old_path, fp.new_path) if p is not None]
    return list(dict.fromkeys(paths))


def unmerged(checkout: Path) -> list[str]:
    """Paths with conflict stages in the index."""
    out = git("diff", "--name-only", "-z", "--diff-filter=U", cwd=checkout).stdout
    return sorted({p for p in out.split("\0") if p})


def changed_tracked(checkout: Path) -> list[str]:
    """Tracked paths whose index or work tree differs from HEAD (untracked files never count)."""
    out = git("diff", "--name-only", "-z", "HEAD", cwd=checkout).stdout
    return sorted({p for p in out.split("\0") if p})


def replay(checkout: Path, patch: Patch, commit: str, moved: dict[str, str]) -> Replayed:
    """Replay `patch` (whose commit on the old pin is `commit`) onto HEAD; a stop leaves the merge
    result in the work tree and index for the user to resolve."""
    path = str(patch.path)
    moves = [f"{fp.old_path} → {moved[fp.old_path]}" for fp in patch.files if fp.old_path in moved]
    paths = patch_paths(patch, moved)
    if git("apply", "--check", "-R", path, cwd=checkout, check=False).returncode == 0:
        return Replayed(ALREADY_UPSTREAM, moves, paths)
    if git("apply", "--check", path, cwd=checkout, check=False).returncode == 0:
        exact = diagnose_patch(patch, lambda rel: current(checkout, rel)) is None
        git("am", "--quiet", "--keep-cr", path, cwd=checkout, env=TOOL_IDENTITY)
        kill_point(f"replay:{patch.name}:committed")
        return Replayed(CLEAN if exact else OFFSET, moves, paths)
    tree = tree_files(checkout)  # HEAD's files: a file the patch modifies may be gone at the target
    missing = [p for fp in patch.files if (p := fp.old_path) is not None and moved.get(p, p) not in tree]
    proc = git(
        "cherry-pick", "--no-commit", "-X", f"find-renames={RENAME_THRESHOLD}%", commit,
        cwd=checkout, env=TOOL_IDENTITY, check=False,
    )  # fmt: skip
    kill_point(f"replay:{patch.name}:merged")
    for rel in missing:  # the merge left the patch's version of a file the target does not have
        git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", rel, cwd=checkout)
        _remove(checkout, rel)
    merged = sorted(set(paths) | set(changed_tracked(checkout)))  # where git's merge put the change
    if missing:
        return Replayed(MISSING, moves, [p for p in merged if p not in missing], missing)
    settled: list[str] = []
    if proc.returncode != 0:
        conflicted = unmerged(checkout)
        if not conflicted:
            raise OverlayError(
                f"git cherry-pick of {patch.name} failed in {checkout}:\n{proc.stderr.strip()}"
            )
        settled = settle(checkout, patch, moved, conflicted)
        if not settled:
            return Replayed(CONFLICT, moves, merged)
    if commit_resolution(checkout, commit):
        kill_point(f"replay:{patch.name}:committed")
        return Replayed(MERGED_3WAY, moves, paths, settled=settled)
    return Replayed(ALREADY_UPSTREAM, moves, paths, settled=settled)


def _remove(checkout: Path, rel: str) -> None:
    """Delete `rel` from the work tree with the directories it leaves empty."""
    (checkout / rel).unlink(missing_ok=True)
    parent = (checkout / rel).parent
    while parent != checkout and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def commit_resolution(checkout: Path, commit: str) -> bool:
    """Commit the index with `commit`'s message and author; False when it changes nothing."""
    if git("diff", "--cached", "--quiet", "HEAD", cwd=checkout, check=False).returncode == 0:
        git("reset", "--quiet", "--hard", "HEAD", cwd=checkout)
        return False
    git("commit", "--quiet", "--no-verify", "-C", commit, cwd=checkout, env=TOOL_IDENTITY)
    return True


def markers(checkout: Path, rels: list[str]) -> list[str]:
    """`file:line` of every conflict marker left in `rels`."""
    found = []
    for rel in rels:
        blob = current(checkout, rel)
        if blob is None or blob.mode == "120000":
            continue
        for number, line in enumerate(blob.data.decode(errors="replace").splitlines(), 1):
            if MARKER.match(line):
                found.append(f"{rel}:{number}")
    return found


def stage_resolution(checkout: Path, stop: Stop, dropped: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Stage the user's resolution of a stopped patch (its own paths, the unmerged ones, and for a
    missing-at-target stop the tracked files changed to carry it); return the staged paths. Refuses
    (naming files) leftover markers, a re-created missing file, a change carried nowhere (unless
    `dropped`), or a tracked file outside the patch."""
    own, conflicted, changed = set(stop.paths), set(unmerged(checkout)), set(changed_tracked(checkout))
    recreated = [m for m in stop.missing if current(checkout, m) is not None]
    if recreated:
        raise OverlayError(
            f"{', '.join(recreated)} is gone at the target (deleted or moved by upstream) and the "
            "resolution re-creates it. Put the change into the file upstream moved it to (see the "
            "report's candidates), delete the re-created file, then --continue; or --skip the patch."
        )
    carried = [m for m in stop.missing if m not in dropped]
    if carried and not changed - own:
        drop = " ".join(f"--drop-file {m}" for m in carried)
        left = markers(checkout, sorted(conflicted))
        first = f"resolve the conflict markers left in {', '.join(left)}, then " if left else ""
        raise OverlayError(
            f"The change to {', '.join(carried)} is not applied anywhere yet: apply its hunks (in the "
            f"report) to the file upstream moved it to, then --continue; or {first}drop just its part "
            f"(`nox -s rebase -- {drop}`: the patch keeps its other files); or --skip the whole patch."
        )
    stage = own | conflicted | (changed if stop.missing else set())
    outside = sorted(changed - stage)
    if outside:
        raise OverlayError(
            f"These tracked files changed but are not part of the patch: {', '.join(outside)}.\n"
            f"Undo them (`git -C {checkout} checkout HEAD -- <file>`), then --continue."
        )
    left = markers(checkout, sorted(stage))
    if left:
        raise OverlayError(
            f"Conflict markers remain in: {', '.join(left)}. Resolve them, then --continue (or --skip)."
        )
    present = sorted(p for p in stage if current(checkout, p) is not None)
    gone = sorted(p for p in stage if current(checkout, p) is None)
    if present:
        git("add", "--", *present, cwd=checkout)
    if gone:
        git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *gone, cwd=checkout)
    return sorted(stage)
