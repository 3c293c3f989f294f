"""`apply`: pinned checkout + patch series (zero fuzz, zero offset) + overlay, atomically and
idempotently (docs/apply.md): the series is verified in a private index first, a journal is on disk
before the first work-tree write (stamp.py), and a stamp records what was written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic_write import remove_leftovers
from ..checkout.clone import ensure_checkout, ensure_pin_commit, exclude_nested, leave_outside
from ..checkout.gitdir import checkout_lock, state_dir
from ..checkout.gitlocks import clear_stale_index_lock_of_checkout, run_index_git
from ..checkout.overlap import overlap_message, overlaps
from ..errors import OverlayError
from ..faults import kill_point
from ..fetch import require_cached
from ..gitcmd import git, git_out
from ..overlay import overlay_blob
from ..patchfile import Patch
from ..series import load_series
from ..targets import Target
from .files import put
from .series_index import build_result
from .stamp import clear_journal, read_journal, read_stamp, write_journal, write_stamp
from .write_plan import local_edits, next_journal, plan_writes


@dataclass
class Outcome:
    """What `apply` did to one target."""

    target: Target
    up_to_date: bool
    patches: list[Patch] = field(default_factory=list)
    overlay: list[str] = field(default_factory=list)


def _digest(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> str:
    h = hashlib.sha256(target.pin.commit.encode())
    series = target.patch_dir / "series"
    h.update(series.read_bytes() if series.exists() else b"")
    for patch in patches:
        h.update(patch.name.encode() + b"\0" + patch.text)
    for rel, path in overlay.items():
        blob = overlay_blob(path)
        h.update(rel.encode() + b"\0" + blob.mode.encode() + b"\0" + blob.data)
    return h.hexdigest()


def apply_target(target: Target, force: bool = False, targets: list[Target] | None = None) -> Outcome:
    """Bring one target to pin + series + overlay. With `targets` (all of them), a pin that tracks
    files where another target is checked out (outside its `outside` folders) is refused first."""
    patches = load_series(target.patch_dir)
    overlay = target.overlay_files()
    ensure_checkout(target)  # clones when missing (checking the cache), clears a killed clone's scratch
    mirror = require_cached(target.pin)
    found = [o for o in overlaps(target, targets or [], mirror, target.pin.commit) if o["owner"] != "overlay"]
    if found:
        raise OverlayError(overlap_message(target, target.pin.commit, found))
    with checkout_lock(target.checkout, "apply"):
        ensure_pin_commit(target)
        leave_outside(target.checkout, target.outside)
        return _apply_locked(target, patches, overlay, force)


def _apply_locked(target: Target, patches: list[Patch], overlay: dict[str, Path], force: bool) -> Outcome:
    checkout, label, pin = target.checkout, target.label, target.pin.commit
    (state_dir(checkout) / "series.index.lock").unlink(missing_ok=True)  # left by a killed git
    clear_stale_index_lock_of_checkout(checkout)
    journal = read_journal(checkout)
    for rel in journal["paths"] if journal else ():  # a killed `put`'s temporary files
        remove_leftovers((checkout / rel).parent, Path(rel).name)
    stamp = read_stamp(checkout)
    digest = _digest(target, patches, overlay)
    result = build_result(target, patches, overlay)
    kill_point(f"{label}:index")
    head = git_out("rev-parse", "HEAD", cwd=checkout)
    edits = local_edits(target, stamp, journal, result, head)
    if edits and not force:
        listing = "\n  ".join(edits)
        raise OverlayError(
            f"{checkout} has local edits that apply would discard:\n  {listing}\n"
            "Keep them with `nox -s refresh` (turns them into patches), or discard them with "
            "`nox -s apply -- --force`."
        )
    if not edits and journal is None and stamp and stamp["digest"] == digest and head == pin:
        return Outcome(target, up_to_date=True, patches=patches, overlay=list(overlay))
    plan = plan_writes(target, stamp, journal, result, head, force)
    write_journal(checkout, next_journal(checkout, journal, plan, head, pin))
    kill_point(f"{label}:journal")
    if head != pin:
        run_index_git(checkout, label, "reset", "--quiet", pin)
        kill_point(f"{label}:head")
    for i, rel in enumerate(plan, 1):
        put(checkout / rel, plan[rel], step=f"{label}:write-{i}")
        kill_point(f"{label}:write-{i}")
    files = {rel: None if blob is None else blob.state for rel, blob in result.items()}
    write_stamp(checkout, {"commit": pin, "digest": digest, "files": files})
    kill_point(f"{label}:stamp")
    clear_journal(checkout)
    return Outcome(target, up_to_date=False, patches=patches, overlay=list(overlay))


def apply_all(
    targets: list[Target], chosen: list[Target] | None = None, force: bool = False
) -> list[Outcome]:
    """Apply the `chosen` targets (default: all) in the config's order, the outer checkout first.

    A target checked out inside another's needs that one checked out first."""
    chosen = targets if chosen is None else chosen
    for target in chosen:
        for outer in targets:
            nested = outer is not target and target.checkout.is_relative_to(outer.checkout)
            if nested and outer not in chosen and not (outer.checkout / ".git").exists():
                raise OverlayError(
                    f"{target.name} is checked out inside the checkout of {outer.name} ({outer.checkout}), "
                    f"which does not exist yet: apply {outer.name} first (`--target {outer.name}`), "
                    "or every target."
                )
    outcomes = []
    for target in chosen:
        outcomes.append(apply_target(target, force=force, targets=targets))
        place = targets.index(target)
        for inner in targets[place + 1 :]:
            exclude_nested(target, inner)
        for outer in targets[:place]:
            if outer not in chosen and (outer.checkout / ".git").exists():
                exclude_nested(outer, target)
    return outcomes


def applied_files(targets: list[Target]) -> dict[str, tuple[str | None, list[str]]]:
    """Apply every target (a no-op when current; local edits refused), then target name -> (its apply
    digest, the files of its checkout that git tracks at the pin or that apply wrote: its stamp's)."""
    apply_all(targets)
    found = {}
    for target in targets:
        stamp, checkout = read_stamp(target.checkout) or {}, target.checkout
        tracked = git("ls-files", "-z", cwd=checkout).stdout.split("\0")
        names = {n for n in tracked if n} | set(stamp.get("files", {}))
        files = sorted(n for n in names if (checkout / n).is_file() or (checkout / n).is_symlink())
        found[target.name] = (stamp.get("digest"), files)
    return found
