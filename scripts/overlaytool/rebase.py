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

import json
import os
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from . import OverlayError
from .apply import apply_target, build_result, ensure_checkout, fetch_cache_refs
from .cache import (
    KEEP_REFS,
    drop_keep_ref,
    fetch,
    fetch_ref,
    local_source,
    mirror_lock,
    mirror_path,
    require_cached,
)
from .checkout import checkout_lock, overlay_files, put, state_dir
from .commit_export import export_commits
from .edit import commit_series
from .faults import kill_point
from .gitcmd import TOOL_IDENTITY, git, git_out, has_commit
from .patchfile import parse_patch
from .pins import URL_RE
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
from .rebase_report import WHAT_TO_DO, conflict_details, remove_report, status_lines, write_report
from .replay import CONFLICT, MISSING, commit_resolution, renames, replay, stage_resolution
from .series import load_series
from .targets import Target

SKIPPED = "skipped (dropped from the series)"
FULL_ID = re.compile(r"^[0-9a-f]{40}$")
BEFORE_REF = "refs/streampetr-dali/before-rebase"  # the series as commits on the old pin
AFTER_REF = "refs/streampetr-dali/after-rebase"  # the replayed series on the target (the finish exports it)


def _state_path(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase.json"


def in_progress(target: Target) -> bool:
    return (target.checkout / ".git").exists() and _state_path(target).exists()


def resolve(target: Target, ref: str, source: str | None) -> tuple[str, bool]:
    """The full commit id `ref` names, fetched into the cache's keep refs; and whether this call
    made its keep ref (an abandoned target's is removed again).

    A full id is fetched by id (from `source`, else the pin's source or URL) when the cache lacks it;
    a name is the branch or tag of `source`, else of the pinned URL, fetched as that one ref."""
    pin = target.pin
    if not FULL_ID.match(ref):
        before = _keep_refs(target)
        commit = fetch_ref(pin, ref, source)
        return commit, commit not in before
    kept = ref in _keep_refs(target)
    if source or not has_commit(require_cached(pin), ref):
        fetch(pin, source, [ref])  # keeps it
        return ref, not kept
    return ref, False  # in the cache already (a branch of the pinned URL holds it): nothing to write


def _keep_refs(target: Target) -> set[str]:
    """The commits the cache mirror keeps (pins and rebase targets fetched so far)."""
    mirror = mirror_path(target.pin)
    if not mirror.is_dir():
        return set()
    out = git("for-each-ref", "--format=%(refname)", f"{KEEP_REFS}/", cwd=mirror, check=False).stdout
    return {line.rsplit("/", 1)[-1] for line in out.splitlines()}


def _source_url(target: Target, ref: str, source: str | None) -> tuple[str | None, list[str]]:
    """What the new pin records as `source` (a URL other than `url`), and warnings to print.

    Without `--from` a name is the pinned URL's branch (no source), a commit id keeps the pin's."""
    if source is None:
        return (target.pin.source if FULL_ID.match(ref) else None), []
    path = local_source(source)
    if path is None:
        return (None if source == target.pin.url else source), []
    remote = git("remote", "get-url", "origin", cwd=path, check=False).stdout.strip()
    reachable = URL_RE.match(remote) and not remote.startswith("file:")  # a URL another machine can use
    hint = f' (its origin is {remote}: `source = "{remote}"` if the commit is there)' if reachable else ""
    return None, [
        f"warning: the new commit came from the local path {path}; the pin's url {target.pin.url} may not "
        f"serve it, so a fresh clone elsewhere may be unable to fetch its own pin.\n"
        "  Point the pin at a reachable source: rebase again with `--from <URL that has the commit>`, or "
        "add "
        f'`source = "<URL>"` below `commit` in {target.pin.file.name}{hint}.'
    ]


def start(target: Target, ref: str, source: str | None = None) -> list[str]:
    """Begin a rebase of the series onto `ref`; returns the printed report lines."""
    if in_progress(target):
        raise OverlayError(
            "A rebase is already in progress: `nox -s rebase -- --continue`, `-- --skip` or `-- --abort`."
        )
    new, keep_created = resolve(target, ref, source)
    try:
        recorded, warnings = _source_url(target, ref, source)
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
    _save(target, state)
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
    _save(target, state)
    return proceed(target, state)


def proceed(target: Target, state: dict) -> list[str]:
    """Replay the remaining patches; stop at a conflict or missing file, finish when all are done."""
    checkout = target.checkout
    while state["next"] < len(state["patches"]):
        name = state["patches"][state["next"]]
        patch = parse_patch(old_patch_dir(target) / name)
        state["head"] = git_out("rev-parse", "HEAD", cwd=checkout)  # where a killed replay is undone to
        _save(target, state)
        done = replay(checkout, patch, state["commits"][state["next"]], state["renames"])
        state["statuses"][name] = done.status
        if done.moves:
            state["moves"][name] = done.moves
        if done.status in (CONFLICT, MISSING):
            state["stop"] = {"kind": done.status, "paths": done.paths, "missing": done.missing}
            _save(target, state)
            details = conflict_details(checkout, patch, state, done.missing)
            report = write_report(checkout, state, details)
            raise OverlayError(_stop_message(state, details, report))
        state["next"] += 1
        _save(target, state)
    return finish(target, state)


def _stop_message(state: dict, details: list[dict], report: Path) -> str:
    """What stopped, the statuses so far, where the report is and what to do next."""
    name = state["patches"][state["next"]]
    what = "modifies a file missing at" if state["stop"]["kind"] == MISSING else "conflicts with"
    lines = [f"Patch {name} {what} upstream {state['new'][:12]}:"]
    for d in details:
        was = f" (moved from {', '.join(d['was'])})" if d["was"] else ""
        if d["kind"] == MISSING:
            best = ", ".join(f"{c['path']} {c['similarity']} %" for c in d["candidates"]) or "none"
            lines.append(f"  {d['file']}: missing at the target; git's best candidates: {best}")
        else:
            lines.append(f"  {d['file']}{was}: conflict")
    lines += ["Statuses so far:", *status_lines(state), f"Report: {report}"]
    lines.append(f"Next: {WHAT_TO_DO[state['stop']['kind']]}")
    return "\n".join(lines)


def resume(target: Target) -> list[str]:
    """`--continue`: commit the resolved patch (or retry the finish) and go on."""
    state = _load(target)
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
            _save(target, state)
        return proceed(target, state)


def skip(target: Target) -> list[str]:
    """`--skip`: drop the stopped patch from the series (reported) and go on."""
    state = _load(target)
    if state["stop"] is None:
        raise OverlayError("No patch is stopped: --skip drops the patch a conflict stopped at.")
    with checkout_lock(target.checkout, "rebase"):
        git("reset", "--quiet", "--hard", "HEAD", cwd=target.checkout)
        state["statuses"][state["patches"][state["next"]]] = SKIPPED
        state["stop"] = None
        state["next"] += 1
        _save(target, state)
        return proceed(target, state)


def abort(target: Target) -> str:
    """`--abort`: restore the series, the pin, the checkout and the cache exactly as they were."""
    state = _load(target)
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


def _save(target: Target, state: dict) -> None:
    path = _state_path(target)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _load(target: Target) -> dict:
    if not in_progress(target):
        raise OverlayError("No rebase is in progress.")
    return json.loads(_state_path(target).read_text(encoding="utf-8"))


def _cleanup(target: Target) -> None:
    """The rebase is over: its state first (a kill after it leaves only leftovers a new rebase replaces)."""
    _state_path(target).unlink(missing_ok=True)
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
        _save(target, state)
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


def dry_run(target: Target, ref: str, source: str | None = None) -> tuple[list[str], bool]:
    """`--check`: replay the series onto `ref` in a scratch clone; the lines to print and whether
    the series carries over. The checkout, the pin, patches/ and the cache's refs stay as they are."""
    new, keep_created = resolve(target, ref, source)
    mirror = require_cached(target.pin)
    target.checkout.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_scratch(target.checkout)
    prefix = f".{target.checkout.name}.rebase-check-{os.getpid()}-"
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=target.checkout.parent))
    try:
        with mirror_lock(target.pin, "rebase --check", shared=True):
            git("clone", "--quiet", "--no-checkout", str(mirror), str(scratch))
        return _dry_run_in(replace(target, checkout=scratch), new)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if keep_created and new != target.pin.commit:
            drop_keep_ref(target.pin, new)


def _dry_run_in(scratch: Target, new: str) -> tuple[list[str], bool]:
    checkout, old = scratch.checkout, scratch.pin.commit
    patches = load_series(scratch.patch_dir)
    git("checkout", "--quiet", "--detach", old, cwd=checkout)
    for patch in patches:
        git("am", "--quiet", "--keep-cr", str(patch.path), cwd=checkout, env=TOOL_IDENTITY)
    commits = git_out("rev-list", "--reverse", f"{old}..HEAD", cwd=checkout).split()
    git("checkout", "--quiet", "--detach", new, cwd=checkout)
    state = {"old": old, "new": new, "patches": [p.name for p in patches], "statuses": {}, "moves": {}}
    state["renames"] = moved = renames(checkout, old, new)
    stopped = []
    for patch, commit in zip(patches, commits, strict=True):
        done = replay(checkout, patch, commit, moved)
        state["statuses"][patch.name] = done.status
        if done.moves:
            state["moves"][patch.name] = done.moves
        if done.status in (CONFLICT, MISSING):
            stopped.append(f"{patch.name}: {', '.join(done.missing) or 'conflict'}")
            git("reset", "--quiet", "--hard", "HEAD", cwd=checkout)  # go on without it
    lines = [f"rebase --check {scratch.label}: {old[:12]} → {new[:12]}", *status_lines(state)]
    if stopped:
        return [*lines, "the series would not carry over: resolve or --skip in a real rebase"], False
    stage_dir = state_dir(checkout) / "check-stage"
    stage_dir.mkdir()
    for path in [scratch.patch_dir / "series", *(p.path for p in patches)]:
        shutil.copy2(path, stage_dir / path.name)
    staged = replace(scratch, pin=replace(scratch.pin, commit=new), patch_dir=stage_dir)
    try:
        export_commits(staged, [parse_patch(stage_dir / p.name) for p in patches], base=new)
        build_result(staged, load_series(stage_dir), overlay_files(scratch.overlay_dir))
    except OverlayError as exc:
        return [*lines, f"the replayed series would not finish: {exc}"], False
    return [*lines, "the series carries over"], True


def _remove_dead_scratch(checkout: Path) -> None:
    """Scratch clones of `--check` runs that were killed (their pid is in the name)."""
    for path in checkout.parent.glob(f".{checkout.name}.rebase-check-*"):
        pid = path.name.removeprefix(f".{checkout.name}.rebase-check-").split("-")[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, PermissionError):
            continue
