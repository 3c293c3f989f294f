"""`rebase --check`: the overlap, then the rebase's own sequence of steps (flow.py) in a scratch
clone, going on past a stop (later statuses marked provisional), and a report where a real rebase
would write the series and the pin; the checkout, the pin, the series and the cache's refs stay as
they are."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..checkout.clone import remove_dead_scratch
from ..checkout.overlap import OVERLAP, overlap_message, overlaps
from ..fetch import drop_keep_ref, require_cached
from ..gitcmd import git
from ..patchfile import Patch
from ..series import load_series
from ..targets import Target
from .flow import FINISH_CHECK, Run, run_steps
from .references import UNCHECKED, reference_lines, suggested_moves
from .replay import CONFLICT, MISSING, patch_paths
from .report import report_paths, settled_lines, status_lines, write_report
from .resolve import resolve, source_url
from .state import RebaseState, Stop, in_progress


def dry_run(
    target: Target,
    ref: str,
    source: str | None = None,
    targets: list[Target] | None = None,
    report: Path | None = None,
) -> tuple[list[str], bool]:
    """`--check`: the lines to print and whether the series carries over. The report goes to
    `report` (JSON, Markdown beside it), else next to the checkout unless a rebase is in progress."""
    new, keep_created = resolve(target, ref, source)
    mirror = require_cached(target.pin)
    target.checkout.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_scratch(target.checkout, "rebase-check")
    prefix = f".{target.checkout.name}.rebase-check-{os.getpid()}-"
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=target.checkout.parent))
    try:
        recorded, warnings = source_url(target, ref, source)
        state = RebaseState(
            old=target.pin.commit,
            new=new,
            patches=[],
            source=recorded,
            given_source=source,
            warnings=warnings,
        )
        found = overlaps(target, targets or [target], mirror, new)
        if found:
            state.patches = [p.name for p in load_series(target.patch_dir)]
            state.first_stop = Stop(OVERLAP, sorted(o["path"] for o in found))
            lines = [f"rebase --check {target.label}: {target.pin.commit[:12]} → {new[:12]}"]
            lines += [
                overlap_message(target, new, found),
                "overlay references: not checked (the check stops at the overlap, before the replay)",
                "the series would not carry over: see the choices above",
            ]
            _report(target, state, report, lines, False, overlaps_found=found)
            return lines, False
        with target.mirror_read_lock("rebase --check"):
            git("clone", "--quiet", "--no-checkout", str(mirror), str(scratch))
        lines, ok = _dry_run_in(replace(target, checkout=scratch), state)
        _report(replace(target, checkout=scratch), state, report, lines, ok, real=target)
        return lines, ok
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if keep_created and new != target.pin.commit:
            drop_keep_ref(target.pin, new)


def _dry_run_in(scratch: Target, state: RebaseState) -> tuple[list[str], bool]:
    patches = load_series(scratch.patch_dir)
    state.patches = [p.name for p in patches]
    stop = run_steps(Run(scratch, state, scratch.patch_dir, scratch.pin, go_on=True))
    left_out = share_files(state, {p.name: p for p in patches})
    lines = [f"rebase --check {scratch.label}: {state.old[:12]} → {state.new[:12]}", *status_lines(state)]
    lines += settled_lines(state)
    if state.references:
        without = f" (checked without {', '.join(left_out)})" if left_out else ""
        lines += [f"the overlay's references would not resolve{without}:", *reference_lines(state.references)]
        moves = suggested_moves(state.references)
        if moves:
            where = "for this target in patches/config.toml"
            lines.append(f"suggested `overlay_moves` {where}: {', '.join(moves)}")
    if state.unchecked:
        lines += [f"{UNCHECKED}:", *reference_lines(state.unchecked)]
    if stop is None:
        return [*lines, "the series carries over"], True
    if stop.kind == FINISH_CHECK:
        state.first_stop = replace(stop, note=stop.note.splitlines()[0])
        return [*lines, f"the replayed series would not finish: {stop.note}"], False
    if state.provisional:
        lines.append(
            f"statuses marked provisional were computed without {', '.join(left_out) or 'the stop'}: "
            f"the real rebase stops at {stop.patch or 'the overlay'} first"
        )
        lines += artefact_lines(state)
    return [*lines, "the series would not carry over: resolve or --skip in a real rebase"], False


def share_files(state: RebaseState, patches: dict[str, Patch]) -> list[str]:
    """Fill `state.shared`: per provisional patch, the files (at the target) it shares with the
    patches the check left out before it; return the patches left out, in order."""
    renames_ = state.renames or {}
    left_out: dict[str, set[str]] = {}
    for name in state.patches:
        paths = set(patch_paths(patches[name], renames_))
        if name in state.provisional:
            state.shared[name] = sorted(paths & set().union(*left_out.values()))
        if state.statuses.get(name) in (CONFLICT, MISSING):
            left_out[name] = paths
    return list(left_out)


def artefact_lines(state: RebaseState) -> list[str]:
    """How many provisional stops may be artefacts of the patches left out (they share files with
    one), and which share none (they would stop the real rebase too)."""
    stops = [n for n in state.provisional if state.statuses.get(n) in (CONFLICT, MISSING)]
    sharing = [n for n in stops if state.shared.get(n)]
    lines = []
    if stops:
        text = f"{len(sharing)} of {len(stops)} provisional stop(s) may be artefacts of the patches left out"
        text += f" ({', '.join(sharing)}: they share files with one)" if sharing else ""
        independent = [n for n in stops if n not in sharing]
        if independent:
            text += f"; {', '.join(independent)} share(s) none and would stop the real rebase too"
        lines.append(text)
    moved = [n for n in state.provisional if n not in stops and state.shared.get(n)]
    if moved:
        lines.append(
            f"{len(moved)} other provisional status(es) share files with a patch left out and may differ in "
            f"the real rebase: {', '.join(moved)}"
        )
    return lines


def _report(
    target: Target,
    state: RebaseState,
    json_path: Path | None,
    lines: list[str],
    ok: bool,
    real: Target | None = None,
    overlaps_found: list[dict] | None = None,
) -> None:
    """Write the check's report (see `dry_run`); a line says where, or why not."""
    real = real or target
    if json_path is None:
        if in_progress(real):
            lines.append("(a rebase is in progress: its report is kept; `--report PATH` writes this one)")
            return
        json_path = report_paths(real.checkout)[1]
    json_path.parent.mkdir(parents=True, exist_ok=True)
    md, _ = write_report(
        target, state, mode="check", json_path=json_path, carries=ok, overlaps=overlaps_found
    )
    lines.append(f"report: {md}")
