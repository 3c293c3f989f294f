"""The rebase's one sequence of steps (:data:`STEPS`: commits, target, replay, stage, check), which the
rebase (`commands.py`) and `rebase --check` (`check.py`) both run; `--continue` and `--skip` come back
in at the replay (:data:`RESUME`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..checkout.clone import leave_outside
from ..errors import OverlayError
from ..export.commit_export import series_commits
from ..gitcmd import git, git_out, tree_files
from ..patchfile import parse_patch
from ..pins import Pin
from ..series import load_series
from ..targets import Target
from ..tree.files import put
from .finish import check, stage
from .references import OVERLAY_REFERENCE, unchecked_references, unresolved_references
from .replay import CONFLICT, MISSING, renames, replay
from .state import RebaseState, Stop

BEFORE_REF = "refs/streampetr-dali/before-rebase"  # the series as commits on the old pin
AFTER_REF = "refs/streampetr-dali/after-rebase"  # the replayed series on the target (the finish exports it)
FINISH_CHECK = "finish-check"  # the stop of a staged series that fails the finish's checks


@dataclass
class Run:
    """One run of the sequence: where it works and what it starts from."""

    target: Target  # the checkout the steps work in: the project's, or --check's scratch clone
    state: RebaseState
    series: Path  # the series it starts from (the copy a rebase takes at its start; --check: patches/)
    pin: Pin  # the pin it starts from
    save: Callable[[RebaseState], None] = lambda state: None
    go_on: bool = False  # --check: past a stopped patch, the statuses after it provisional
    new_pin: Pin | None = None  # set by the staging
    staged: Target | None = None  # the new pin and the staged series, set by the staging


def as_commits(run: Run) -> None:
    """The series as commits on the old pin (`BEFORE_REF`); the overlay's copies are never replayed."""
    checkout = run.target.checkout
    run.state.commits = series_commits(checkout, run.state.old, load_series(run.series))
    git("update-ref", BEFORE_REF, "HEAD", cwd=checkout)
    for rel in run.target.overlay_files():
        put(checkout / rel, None)


def check_out_target(run: Run) -> None:
    """The target commit, checked out; the files upstream renamed between the two commits."""
    checkout, state = run.target.checkout, run.state
    leave_outside(checkout, run.target.outside)
    git("checkout", "--quiet", "--detach", state.new, cwd=checkout)
    state.renames = renames(checkout, state.old, state.new)
    run.save(state)


def replay_patches(run: Run) -> Stop | None:
    """Each patch from `state.next` onto HEAD, then the overlay's references in the rebased tree; the
    stop (saved in `state.stop`), or None when the series is through. `go_on` (`--check`): a stop is
    recorded as `state.first_stop` and left out, later statuses provisional."""
    target, state, save, checkout = run.target, run.state, run.save, run.target.checkout
    assert state.renames is not None
    while state.next < len(state.patches):
        name = state.patches[state.next]
        state.head = git_out("rev-parse", "HEAD", cwd=checkout)
        save(state)
        done = replay(checkout, parse_patch(run.series / name), state.commits[state.next], state.renames)
        state.statuses[name] = done.status
        if done.moves:
            state.moves[name] = done.moves
        if done.settled:
            state.settled[name] = done.settled
        if state.first_stop is not None:
            state.provisional.append(name)
        if done.status in (CONFLICT, MISSING):
            stop = Stop(done.status, done.paths, done.missing, patch=name)
            if not run.go_on:
                state.stop = stop
                save(state)
                return stop
            state.first_stop = state.first_stop or stop
            git("reset", "--quiet", "--hard", "HEAD", cwd=checkout)  # go on without it
        state.next += 1
        save(state)
    tree = tree_files(checkout)  # listed once for both checks
    references = unresolved_references(target, checkout, tree, state.new, state.renames)
    state.references, state.unchecked = references, unchecked_references(target, checkout, tree)
    save(state)
    if references:
        stop = Stop(OVERLAY_REFERENCE, sorted({r["file"] for r in references}), references=references)
        if run.go_on:
            state.first_stop = state.first_stop or stop
        else:
            state.stop = stop
            save(state)
            return stop
    return state.first_stop


def stage_series(run: Run) -> None:
    """The replayed commits (`AFTER_REF`) exported as the new series into the staging directory."""
    checkout, state = run.target.checkout, run.state
    head = git_out("rev-parse", "HEAD", cwd=checkout)
    if state.tip and head == state.new and state.tip != head:  # an earlier finish re-applied
        git("checkout", "--quiet", "--force", "--detach", state.tip, cwd=checkout)
    else:
        state.tip = head
        git("update-ref", AFTER_REF, head, cwd=checkout)
        run.save(state)
    date = git_out("log", "-1", "--format=%cd", "--date=short", state.new, cwd=checkout)
    run.new_pin = replace(run.pin, commit=state.new, date=date, source=state.source)
    run.staged = stage(run.target, run.series, run.new_pin)


STEPS: list[tuple[str, Callable[[Run], Stop | None]]] = [
    ("commits", as_commits),
    ("target", check_out_target),
    ("replay", replay_patches),
    ("stage", stage_series),
    ("check", lambda run: check(run.staged)),  # the staged series against the new pin, as `apply` checks
]
RESUME = "replay"  # where `--continue` and `--skip` come back in
FINISH = {"stage", "check"}  # their failure is a stop (FINISH_CHECK) with the reason as its note


def run_steps(run: Run, first: str = "commits") -> Stop | None:
    """The steps from ``first`` on; the first stop, or None when the staged series passed."""
    names = [name for name, _ in STEPS]
    for name, step in STEPS[names.index(first) :]:
        try:
            stop = step(run)
        except OverlayError as exc:
            if name not in FINISH:
                raise
            stop = Stop(FINISH_CHECK, note=str(exc))
        if stop is not None:
            return stop
    return None
