"""The replay loop every rebase path shares (`rebase`, `--continue`, `--skip`, `--check`): each patch
onto the target, then the check of the overlay's references into the rebased tree. (The series
becomes commits on the old pin first, as `edit` makes them: export/edit.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..gitcmd import git, git_out
from ..patchfile import parse_patch
from ..targets import Target
from .references import OVERLAY_REFERENCE, unchecked_references, unresolved_references
from .replay import CONFLICT, MISSING, replay
from .state import RebaseState, Stop


def replay_series(
    target: Target,
    state: RebaseState,
    patch_dir: Path,
    save: Callable[[RebaseState], None],
    go_on: bool = False,
) -> Stop | None:
    """Replay the patches from `state.next` onto the checkout's HEAD, then check the overlay's
    references (`state.references`; those built at run time: `state.unchecked`); return the stop
    (saved in `state.stop`), or None when the series is through.

    `go_on` (`--check`): a stopped patch is recorded as `state.first_stop`, left out, and the
    statuses after it are marked provisional (the real run stops there); the references are
    checked all the same, without the patches left out."""
    checkout = target.checkout
    assert state.renames is not None
    while state.next < len(state.patches):
        name = state.patches[state.next]
        patch = parse_patch(patch_dir / name)
        state.head = git_out("rev-parse", "HEAD", cwd=checkout)
        save(state)
        done = replay(checkout, patch, state.commits[state.next], state.renames)
        state.statuses[name] = done.status
        if done.moves:
            state.moves[name] = done.moves
        if state.first_stop is not None:
            state.provisional.append(name)
        if done.status in (CONFLICT, MISSING):
            stop = Stop(done.status, done.paths, done.missing, patch=name)
            if not go_on:
                state.stop = stop
                save(state)
                return stop
            state.first_stop = state.first_stop or stop
            git("reset", "--quiet", "--hard", "HEAD", cwd=checkout)  # go on without it
        state.next += 1
        save(state)
    references = unresolved_references(target, checkout, state.new, state.renames)
    state.references, state.unchecked = references, unchecked_references(target)
    save(state)
    if not references:
        return None
    stop = Stop(OVERLAY_REFERENCE, sorted({r["file"] for r in references}), references=references)
    if go_on:
        state.first_stop = state.first_stop or stop
        return None
    state.stop = stop
    save(state)
    return stop
