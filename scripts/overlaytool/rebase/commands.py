"""The rebase commands: start, `--continue`, `--skip`, `--abort`, and the finish they end in."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from ..cache import mirror_path
from ..checkout.clone import ensure_checkout, fetch_cache_refs, leave_outside
from ..checkout.gitdir import checkout_lock
from ..checkout.overlap import refuse_overlaps
from ..errors import OverlayError
from ..faults import kill_point
from ..fetch import drop_keep_ref
from ..gitcmd import git, git_out, tree_files
from ..patchfile import parse_patch
from ..series import load_series
from ..targets import Target
from ..tree.apply import apply_target
from .finish import discard, has_snapshot, new_pin_text, old_patch_dir, old_pin, publish, restore, snapshot
from .flow import AFTER_REF, BEFORE_REF, FINISH_CHECK, RESUME, Run, run_steps
from .references import OVERLAY_REFERENCE, UNCHECKED, reference_lines
from .replay import MISSING, commit_resolution, patch_paths, stage_resolution
from .report import report_paths, settled_lines, status_lines, stop_message, write_report
from .resolve import resolve, source_url
from .state import UNCHANGED, RebaseState, in_progress, load_state, save_state, state_path

SKIPPED = "skipped (dropped from the series)"
CACHE_REFS = "refs/streampetr-dali/cache/"  # the cache mirror's refs, fetched into the checkout


def start(
    target: Target, ref: str, source: str | None = None, targets: list[Target] | None = None
) -> list[str]:
    """Begin a rebase of the series onto `ref`; returns the printed report lines."""
    if in_progress(target):
        raise OverlayError(
            "A rebase is already in progress: `nox -s rebase -- --continue`, `-- --skip` or `-- --abort`."
        )
    new, keep_created = resolve(target, ref, source)
    try:
        refuse_overlaps(target, targets or [target], mirror_path(target.pin), new)  # before any write
        recorded, warnings = source_url(target, ref, source)
        ensure_checkout(target)  # the checkout the lock lives in
        with checkout_lock(target.checkout, "rebase"):
            apply_target(target)  # refuses (naming files) if the checkout has local edits
            state = RebaseState(
                old=target.pin.commit,
                new=new,
                patches=[p.name for p in load_series(target.patch_dir)],
                source=recorded,
                given_source=source,
                keep_created=keep_created,
                warnings=warnings,
            )
            snapshot(target)
            save_state(target, state)
            fetch_cache_refs(target, "rebase")  # the target may have reached the cache after the clone
            return proceed(target, state, first="commits")
    except OverlayError:
        if keep_created and not in_progress(target):  # nothing started: the target is abandoned
            drop_keep_ref(target.pin, new)
        raise


def proceed(target: Target, state: RebaseState, first: str = RESUME) -> list[str]:
    """The rebase's steps (flow.py) from ``first`` on, from the series and pin copied aside at the start;
    a stop is raised with its report, else the finish writes the result."""
    run = Run(target, state, old_patch_dir(target), old_pin(target), save=partial(save_state, target))
    stop = run_steps(run, first)
    if stop is None:
        return finish(run)
    if stop.kind == FINISH_CHECK:
        raise OverlayError(
            f"The rebase cannot finish: {stop.note}\nNothing in patches/ or the pin was written; the rebase "
            "is still in progress. Fix the problem, then `nox -s rebase -- --continue`; or `-- --abort`.\n"
            "Statuses:\n" + "\n".join(status_lines(state))
        )
    report, details = write_report(target, state, old_patch_dir(target))
    raise OverlayError(stop_message(state, details, report))


def resume(target: Target, drop: list[str] | None = None) -> list[str]:
    """`--continue`: commit the resolved patch (or re-check the overlay, or retry the finish) and go on.
    `drop` (`--drop-file`): files missing at the target whose part of the stopped patch is dropped."""
    state = load_state(target)
    if state.renames is None:
        raise OverlayError(
            "The rebase was interrupted while it started: `nox -s rebase -- --abort`, then again."
        )
    if drop:
        _drop_files(state, drop)
        save_state(target, state)
    checkout = target.checkout
    with checkout_lock(checkout, "rebase"):
        stop = state.stop
        head = git_out("rev-parse", "HEAD", cwd=checkout)
        if stop is None and state.next < len(state.patches) and state.head:  # a killed replay
            git("am", "--abort", cwd=checkout, check=False)
            git("reset", "--quiet", "--hard", state.head, cwd=checkout)
        if stop is not None and stop.kind == OVERLAY_REFERENCE:  # the replay checks them again
            state.stop = None
            save_state(target, state)
        elif stop is not None:
            name = state.stopped_patch
            if head == state.head:  # else a --continue was killed after committing the resolution
                try:
                    stage_resolution(checkout, stop, state.dropped.get(name, []))
                    if git("diff", "--cached", "--quiet", "HEAD", cwd=checkout, check=False).returncode == 0:
                        state.unchanged = sorted({*state.unchanged, name})
                        save_state(target, state)
                        raise OverlayError(
                            f"The resolution of {name} changes nothing. If upstream already has the change, "
                            "drop the patch with --skip; otherwise apply it, then --continue."
                        )
                except OverlayError as exc:
                    raise OverlayError(f"{exc}\nStatuses so far:\n" + "\n".join(status_lines(state))) from exc
                commit_resolution(checkout, state.commits[state.next])
                kill_point(f"replay:{name}:resolved")
            state.statuses[name] = f"{stop.kind} (resolved)"
            state.stop = None
            state.next += 1
            save_state(target, state)
        return proceed(target, state)


def _drop_files(state: RebaseState, drop: list[str]) -> None:
    """Record `--drop-file` paths: files the stopped patch modifies that the target lacks."""
    stop = state.stop
    if stop is None or stop.kind != MISSING:
        raise OverlayError(
            "--drop-file drops the part of a patch stopped as missing-at-target whose file the target "
            "lacks; no such patch is stopped."
        )
    unknown = [p for p in drop if p not in stop.missing]
    if unknown:
        raise OverlayError(
            f"--drop-file {unknown[0]}: not a file of {state.stopped_patch} missing at the target "
            f"(those are: {', '.join(stop.missing)})."
        )
    name = state.stopped_patch
    state.dropped[name] = sorted({*state.dropped.get(name, []), *drop})


def skip(target: Target) -> list[str]:
    """`--skip`: drop the stopped patch from the series (reported) and go on."""
    state = load_state(target)
    if state.stop is None:
        raise OverlayError("No patch is stopped: --skip drops the patch a conflict stopped at.")
    if state.stop.kind == OVERLAY_REFERENCE:
        raise OverlayError(
            "The rebase stopped at the overlay's references, not at a patch: fix overlay/ or the target's "
            "`overlay_moves` in patches/config.toml (the report says which), then --continue; or --abort."
        )
    with checkout_lock(target.checkout, "rebase"):
        git("reset", "--quiet", "--hard", "HEAD", cwd=target.checkout)
        name = state.stopped_patch
        state.skips[name] = UNCHANGED if name in state.unchanged else state.stop.kind
        state.dropped.pop(name, None)  # dropped whole: a part dropped before (--drop-file) is no longer news
        state.statuses[name] = SKIPPED
        state.stop = None
        state.next += 1
        save_state(target, state)
        return proceed(target, state)


def abort(target: Target) -> str:
    """`--abort`: restore the series, the pin, the checkout and the cache exactly as they were."""
    if not in_progress(target):
        raise OverlayError("No rebase is in progress.")
    try:
        state: RebaseState | None = load_state(target)
    except OverlayError:
        if not has_snapshot(target):
            raise
        state = None  # unreadable: the snapshot alone says where to go back to
    checkout = target.checkout
    with checkout_lock(checkout, "rebase"):
        git("am", "--abort", cwd=checkout, check=False)
        git("cherry-pick", "--quit", cwd=checkout, check=False)
        old = target
        if has_snapshot(target):  # (a rebase begun by an older version wrote nothing before its end)
            restore(target)  # the project files as they were (a kill mid-finish included)
            old = replace(target, pin=old_pin(target))
        commit = state.old if state else old.pin.commit
        leave_outside(checkout, target.outside)
        git("checkout", "--quiet", "--force", "--detach", commit, cwd=checkout)
        apply_target(old, force=True)
        if state and state.keep_created and state.new != state.old:
            drop_keep_ref(old.pin, state.new)
        for path in report_paths(checkout):
            path.unlink(missing_ok=True)
        _cleanup(target)
    return f"rebase aborted: {target.label} is back at {commit[:12]} with the old series applied"


def _cleanup(target: Target) -> None:
    """The rebase is over: its state first (a kill after it leaves only leftovers a new rebase
    replaces), then its refs and the cache's refs fetched into the checkout, then the copies."""
    state_path(target).unlink(missing_ok=True)
    for ref in (BEFORE_REF, AFTER_REF):
        git("update-ref", "-d", ref, cwd=target.checkout, check=False)
    listing = git("for-each-ref", "--format=%(refname)", CACHE_REFS, cwd=target.checkout, check=False).stdout
    if listing.strip():
        commands = "".join(f"delete {ref}\n" for ref in listing.split())
        git("update-ref", "--stdin", cwd=target.checkout, input=commands.encode(), text=False)
    discard(target)


def _skip_warnings(target: Target, state: RebaseState, tip: str) -> list[str]:
    """A warning per patch `--skip` dropped that also changed files the target still has (none for a
    patch whose resolution changed nothing: skipping was the tool's advice)."""
    tree = tree_files(target.checkout, tip)
    out = []
    for name in state.patches:
        why = state.skips.get(name, MISSING)  # a state of the older version: as it warned before
        if state.statuses.get(name) != SKIPPED or why == UNCHANGED:
            continue
        paths = patch_paths(parse_patch(old_patch_dir(target) / name), state.renames or {})
        kept = [p for p in paths if p in tree]
        if not kept:
            continue
        text = (
            f"warning: --skip dropped {name} whole, and with it its change to {', '.join(kept)} (files the "
            "target has). If that change is still needed, carry it again (`nox -s edit`, then a commit)"
        )
        if why == MISSING:
            text += "; to keep such hunks, drop just the missing file's part with --drop-file, not --skip"
        out.append(text + ".")
    return out


def finish(run: Run) -> list[str]:
    """The staged series passed: write it and the pin, re-apply, print the range-diff."""
    target, state, staged, new_pin = run.target, run.state, run.staged, run.new_pin
    assert staged is not None and new_pin is not None and state.tip is not None
    checkout, tip, date = target.checkout, state.tip, new_pin.date
    state.warnings = list(dict.fromkeys([*state.warnings, *_skip_warnings(target, state, tip)]))
    publish(target, staged, new_pin_text(target, state.new, date, state.source))
    range_diff = git(
        "range-diff", f"{state.old}..{BEFORE_REF}", f"{state.new}..{tip}", cwd=checkout, check=False
    ).stdout
    apply_target(replace(target, pin=new_pin), force=True)
    kill_point("rebase:applied")
    outcome = f"the pin moved to {state.new[:12]} ({date}); the series is re-exported and applied"
    report, _ = write_report(target, state, done=outcome)
    _cleanup(target)
    lines = [f"{target.label}: {state.old[:12]} → {state.new[:12]} ({date}); report: {report}"]
    lines += status_lines(state)
    lines += settled_lines(state)
    skipped = [name for name in state.patches if state.statuses.get(name) == SKIPPED]
    if skipped:
        lines.append(f"dropped from the series (--skip): {', '.join(skipped)}")
    lines += [
        f"dropped from {name} (--drop-file): {', '.join(files)}" for name, files in state.dropped.items()
    ]
    lines += state.warnings
    if state.unchecked:
        lines += [f"warning: {UNCHECKED}:", *reference_lines(state.unchecked)]
    return [*lines, "range-diff of the old and new series:", range_diff.rstrip() or "  (identical)"]
