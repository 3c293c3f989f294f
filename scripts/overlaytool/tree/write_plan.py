"""What an apply run may write (the local edits it must refuse, the paths it changes, the journal),
decided from the stamp, a killed run's journal, the series' result and the checkout; nothing is written.
"""

from __future__ import annotations

from pathlib import Path

from ..gitcmd import git, git_out
from ..overlay import Blob
from ..targets import Target
from .files import current_state, modified, same_state
from .series_index import pin_blob
from .stamp import owns


def local_edits(
    target: Target, stamp: dict | None, journal: dict | None, result: dict[str, Blob | None], head: str
) -> list[str]:
    """Paths whose state is neither what the last apply left nor what a killed run journaled."""
    checkout = target.checkout
    edits = []
    heads = {stamp["commit"] if stamp else target.pin.commit, *(journal["heads"] if journal else ())}
    if head not in heads:
        expected = stamp["commit"] if stamp else target.pin.commit
        edits.append(f"HEAD is {head[:12]}, expected {expected[:12]} (commits or checkouts made by hand)")
    changed = modified(checkout)
    owned = dict(stamp["files"]) if stamp else {}
    for rel in sorted(changed - owned.keys()):
        if not owns(journal, rel, current_state(checkout, rel)):
            edits.append(rel)
    for rel, recorded in sorted(owned.items()):
        state = current_state(checkout, rel)
        if not same_state(recorded, state) and not owns(journal, rel, state):
            edits.append(rel)
    for rel, want in result.items():
        state = current_state(checkout, rel)
        if rel in owned or rel in changed or state is None or (want is not None and state == want.state):
            continue
        if owns(journal, rel, state):
            continue
        if git("ls-files", "--error-unmatch", rel, cwd=checkout, check=False).returncode:
            edits.append(f"{rel} (untracked file the overlay would overwrite)")
    return edits


def plan_writes(
    target: Target,
    stamp: dict | None,
    journal: dict | None,
    result: dict[str, Blob | None],
    head: str,
    force: bool,
) -> dict[str, Blob | None]:
    """Every path whose work-tree state must change, with the state it gets (None = delete): what the
    series and overlay write, the last apply wrote, a killed run journaled, HEAD and the pin differ in,
    and (with force) every modified file."""
    checkout = target.checkout
    paths = set(result) | set(stamp["files"] if stamp else ()) | set(journal["paths"] if journal else ())
    if head != target.pin.commit:
        diff = git_out("diff", "--name-only", "--no-renames", "-z", head, target.pin.commit, cwd=checkout)
        paths |= {p for p in diff.split("\0") if p}
    if force:
        paths |= modified(checkout)
    plan = {}
    for rel in sorted(paths):
        want = result[rel] if rel in result else pin_blob(target, rel)
        if current_state(checkout, rel) != (None if want is None else want.state):
            plan[rel] = want
    return plan


def next_journal(checkout: Path, old: dict | None, plan: dict[str, Blob | None], head: str, pin: str) -> dict:
    """The new journal: for each planned path, its state now and the state it gets (plus an older
    journal's states, in case its run was killed before reaching this path)."""
    paths = {rel: list(states) for rel, states in (old["paths"] if old else {}).items()}
    for rel, want in plan.items():
        states = paths.setdefault(rel, [])
        for state in (current_state(checkout, rel), None if want is None else want.state):
            if state not in states:
                states.append(state)
    heads = sorted({head, pin, *(old["heads"] if old else ())})
    return {"commit": pin, "heads": heads, "paths": paths}
