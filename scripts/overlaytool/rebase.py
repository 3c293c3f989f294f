"""`rebase`: move the patch series to a new upstream commit, one patch at a time.

The series becomes commits on the old pin, then each patch is replayed onto the target (replay.py)
and gets a status: `clean`, `offset`, `merged-3way` (a three-way merge, also the way a patch follows
a file upstream moved: the status says `old → new`), `already-upstream` (dropped), `conflict` or
`missing-at-target` (both stop: a Markdown + JSON report names the patch, the files, the hunks, the
conflicting lines or git's rename candidates, and the upstream commits; resolve in the checkout,
then `--continue`, or `--skip` the patch, or `--abort`). The finish is all-or-nothing
(rebase_finish.py): the pin moves, the series is re-exported and a range-diff is printed only once
every check passed. `--check` does the replay in a scratch clone and changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from . import OverlayError
from .apply import apply_target
from .checkout import checkout_lock
from .clone import ensure_checkout, fetch_cache_refs
from .edit import commit_series
from .faults import kill_point
from .fetch import drop_keep_ref
from .files import put
from .gitcmd import git, git_out
from .overlay import overlay_files
from .patchfile import parse_patch
from .rebase_finish import check as check_staged
from .rebase_finish import (
    discard,
    has_snapshot,
    new_pin_text,
    old_patch_dir,
    old_pin,
    publish,
    restore,
    snapshot,
    stage,
)
from .rebase_report import conflict_details, remove_report, status_lines, stop_message, write_report
from .rebase_state import in_progress, load_state, save_state, state_path
from .rebase_target import resolve, source_url
from .replay import CONFLICT, MISSING, commit_resolution, renames, replay, stage_resolution
from .series import load_series
from .targets import Target

SKIPPED = "skipped (dropped from the series)"
BEFORE_REF = "refs/streampetr-dali/before-rebase"  # the series as commits on the old pin
AFTER_REF = "refs/streampetr-dali/after-rebase"  # the replayed series on the target (the finish exports it)


def start(target: Target, ref: str, source: str | None = None) -> list[str]:
    """Begin a rebase of the series onto `ref`; returns the printed report lines."""
    if in_progress(target):
        raise OverlayError(
            "A rebase is already in progress: `nox -s rebase -- --continue`, `-- --skip` or `-- --abort`."
        )
    new, keep_created = resolve(target, ref, source)
    try:
        recorded, warnings = source_url(target, ref, source)
        ensure_checkout(target)  # the checkout the lock lives in
        with checkout_lock(target.checkout, "rebase"):
            apply_target(target)  # refuses (naming files) if the checkout has local edits
            fetch_cache_refs(target, "rebase")
            return _begin(target, new, keep_created, recorded, warnings)
    except OverlayError:
        if keep_created and not in_progress(target):  # nothing started: the target is abandoned
            drop_keep_ref(target.pin, new)
        raise


def _begin(
    target: Target, new: str, keep_created: bool, source: str | None, warnings: list[str]
) -> list[str]:
    """Snapshot the project files, save the state, turn the series into commits and replay it."""
    state = {
        "old": target.pin.commit,
        "new": new,
        "source": source,
        "keep_created": keep_created,
        "patches": [p.name for p in load_series(target.patch_dir)],
        "commits": [],
        "statuses": {},
        "moves": {},
        "next": 0,
        "stop": None,
        "warnings": warnings,
    }
    snapshot(target)
    save_state(target, state)
    return _start_locked(target, state)


def _start_locked(target: Target, state: dict) -> list[str]:
    checkout = target.checkout
    commit_series(target)
    state["commits"] = git_out("rev-list", "--reverse", f"{state['old']}..HEAD", cwd=checkout).split()
    git("update-ref", BEFORE_REF, "HEAD", cwd=checkout)
    for rel in overlay_files(target.overlay_dir):  # copies of overlay/: never part of the replay
        put(checkout / rel, None)
    git("checkout", "--quiet", "--detach", state["new"], cwd=checkout)
    state["renames"] = renames(checkout, state["old"], state["new"])
    save_state(target, state)
    return proceed(target, state)


def proceed(target: Target, state: dict) -> list[str]:
    """Replay the remaining patches; stop at a conflict or missing file, finish when all are done."""
    checkout = target.checkout
    while state["next"] < len(state["patches"]):
        name = state["patches"][state["next"]]
        patch = parse_patch(old_patch_dir(target) / name)
        state["head"] = git_out("rev-parse", "HEAD", cwd=checkout)  # where a killed replay is undone to
        save_state(target, state)
        done = replay(checkout, patch, state["commits"][state["next"]], state["renames"])
        state["statuses"][name] = done.status
        if done.moves:
            state["moves"][name] = done.moves
        if done.status in (CONFLICT, MISSING):
            state["stop"] = {"kind": done.status, "paths": done.paths, "missing": done.missing}
            save_state(target, state)
            details = conflict_details(checkout, patch, state, done.missing)
            report = write_report(checkout, state, details)
            raise OverlayError(stop_message(state, details, report))
        state["next"] += 1
        save_state(target, state)
    return finish(target, state)


def resume(target: Target) -> list[str]:
    """`--continue`: commit the resolved patch (or retry the finish) and go on."""
    state = load_state(target)
    if "renames" not in state:
        raise OverlayError(
            "The rebase was interrupted while it started: `nox -s rebase -- --abort`, then again."
        )
    checkout = target.checkout
    with checkout_lock(checkout, "rebase"):
        stop = state["stop"]
        head = git_out("rev-parse", "HEAD", cwd=checkout)
        if stop is None and state["next"] < len(state["patches"]) and state.get("head"):  # a killed replay
            git("am", "--abort", cwd=checkout, check=False)
            git("reset", "--quiet", "--hard", state["head"], cwd=checkout)
        if stop is not None:
            name = state["patches"][state["next"]]
            if head == state["head"]:  # else a --continue was killed after committing the resolution
                try:
                    stage_resolution(checkout, stop)
                    if git("diff", "--cached", "--quiet", "HEAD", cwd=checkout, check=False).returncode == 0:
                        raise OverlayError(
                            f"The resolution of {name} changes nothing. If upstream already has the change, "
                            "drop the patch with --skip; otherwise apply it, then --continue."
                        )
                except OverlayError as exc:
                    raise OverlayError(f"{exc}\nStatuses so far:\n" + "\n".join(status_lines(state))) from exc
                commit_resolution(checkout, state["commits"][state["next"]])
                kill_point(f"replay:{name}:resolved")
            state["statuses"][name] = f"{stop['kind']} (resolved)"
            state["stop"] = None
            state["next"] += 1
            save_state(target, state)
        return proceed(target, state)


def skip(target: Target) -> list[str]:
    """`--skip`: drop the stopped patch from the series (reported) and go on."""
    state = load_state(target)
    if state["stop"] is None:
        raise OverlayError("No patch is stopped: --skip drops the patch a conflict stopped at.")
    with checkout_lock(target.checkout, "rebase"):
        git("reset", "--quiet", "--hard", "HEAD", cwd=target.checkout)
        state["statuses"][state["patches"][state["next"]]] = SKIPPED
        state["stop"] = None
        state["next"] += 1
        save_state(target, state)
        return proceed(target, state)


def abort(target: Target) -> str:
    """`--abort`: restore the series, the pin, the checkout and the cache exactly as they were."""
    state = load_state(target)
    checkout = target.checkout
    with checkout_lock(checkout, "rebase"):
        git("am", "--abort", cwd=checkout, check=False)
        old = target
        if has_snapshot(target):  # (a rebase begun by an older version wrote nothing before its end)
            restore(target)  # the project files as they were (a kill mid-finish included)
            old = replace(target, pin=old_pin(target))
        git("checkout", "--quiet", "--force", "--detach", state["old"], cwd=checkout)
        apply_target(old, force=True)
        if state.get("keep_created") and state["new"] != state["old"]:
            drop_keep_ref(old.pin, state["new"])
        remove_report(checkout)
        _cleanup(target)
    return f"rebase aborted: {target.label} is back at {state['old'][:12]} with the old series applied"


def _cleanup(target: Target) -> None:
    """The rebase is over: its state first (a kill after it leaves only leftovers a new rebase replaces)."""
    state_path(target).unlink(missing_ok=True)
    for ref in (BEFORE_REF, AFTER_REF):
        git("update-ref", "-d", ref, cwd=target.checkout, check=False)
    discard(target)


def finish(target: Target, state: dict) -> list[str]:
    """Stage and check the new series, then write it and the pin, re-apply, print the range-diff."""
    checkout = target.checkout
    head = git_out("rev-parse", "HEAD", cwd=checkout)
    tip = state.get("tip")
    if tip and head == state["new"] and tip != head:
        git("checkout", "--quiet", "--force", "--detach", tip, cwd=checkout)  # an earlier finish re-applied
    else:
        state["tip"] = tip = head
        git("update-ref", AFTER_REF, tip, cwd=checkout)
        save_state(target, state)
    date = git_out("log", "-1", "--format=%cd", "--date=short", state["new"], cwd=checkout)
    new_pin = replace(old_pin(target), commit=state["new"], date=date, source=state["source"])
    try:
        staged = stage(target, new_pin)
        check_staged(staged)
    except OverlayError as exc:
        raise OverlayError(
            f"The rebase cannot finish: {exc}\nNothing in patches/ or the pin was written; the rebase "
            "is still in progress. Fix the problem, then `nox -s rebase -- --continue`; or `-- --abort`.\n"
            "Statuses:\n" + "\n".join(status_lines(state))
        ) from exc
    publish(target, staged, new_pin_text(target, state["new"], date, state["source"]))
    range_diff = git(
        "range-diff", f"{state['old']}..{BEFORE_REF}", f"{state['new']}..{tip}", cwd=checkout, check=False
    ).stdout
    apply_target(replace(target, pin=new_pin), force=True)
    kill_point("rebase:applied")
    outcome = f"the pin moved to {state['new'][:12]} ({date}); the series is re-exported and applied"
    report = write_report(checkout, state, done=outcome)
    _cleanup(target)
    lines = [f"{target.label}: {state['old'][:12]} → {state['new'][:12]} ({date}); report: {report}"]
    lines += status_lines(state)
    skipped = [name for name in state["patches"] if state["statuses"][name] == SKIPPED]
    if skipped:
        lines.append(f"dropped from the series (--skip): {', '.join(skipped)}")
    lines += state.get("warnings", [])
    return [*lines, "range-diff of the old and new series:", range_diff.rstrip() or "  (identical)"]
