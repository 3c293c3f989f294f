"""The rebase report (`upstream/rebase-report.md` and `.json`, fields in docs/rebase.md) and the status
lines printed at every stop.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..atomic_write import replace_file
from ..gitcmd import git
from ..patchfile import Patch, decode, parse_patch
from ..targets import Target
from .references import OVERLAY_REFERENCE, UNCHECKED, reference_lines, reference_summary, suggested_moves
from .replay import CONFLICT, MISSING, RENAME_THRESHOLD, patch_paths, renames, unmerged
from .settle import SETTLED, own_words
from .state import FORMAT, RebaseState, Stop

MERGED = "merged"  # a file of a stopped patch that git merged cleanly: nothing to resolve there
WHAT_TO_DO = {
    "conflict": "Resolve the conflict markers in the checkout, then `nox -s rebase -- --continue`; "
    "or `--skip` to drop the patch from the series; or `--abort` to go back to the old pin.",
    MERGED: "Merged cleanly: nothing to resolve in this file; its change stays with the patch.",
    OVERLAY_REFERENCE: "The overlay names files of upstream that the new commit does not have. Where "
    "upstream moved a whole folder, place the overlay there with `overlay_moves` in the target's "
    "[[target]] of "
    "patches/config.toml (suggested above); else edit the overlay file. Then `nox -s rebase -- --continue`; "
    "or `--abort`.",
}


SECTION = {MISSING: "File missing at the target", MERGED: "Merged cleanly"}


def missing_what_to_do(
    rel: str, candidates: list[dict], others: list[str], conflicted: list[str] | tuple[str, ...] = ()
) -> str:
    """What to do with a file a stopped patch modifies that the target lacks: carry the change to a
    candidate, drop this file's part (`--drop-file`) when the patch changes `others` too, or `--skip`."""
    first = (
        f"resolve the conflict markers in {', '.join(conflicted)} (the patch's change to it), then "
        if conflicted
        else ""
    )
    drop = (
        f"{first}drop just this file's part with `nox -s rebase -- --drop-file {rel}` (the patch keeps its "
        f"change to {', '.join(others)}); or `--skip` to drop the whole patch, {', '.join(others)} included"
        if others
        else "`--skip` to drop the patch from the series"
    )
    if candidates:
        return (
            "The target has no such file: upstream deleted it, or moved and rewrote it beyond rename "
            f"detection ({RENAME_THRESHOLD} % similarity). Apply the hunks to the file that now holds that "
            "code (git's best matches are the candidates listed above), then `nox -s rebase -- --continue`; "
            f"or {drop}; or `--abort`."
        )
    return (
        "No file of the target resembles it: upstream deleted it. Either "
        f"{drop}; or, if its code lives on in a file git cannot match, apply the hunks there and "
        "`nox -s rebase -- --continue`; or `--abort`."
    )


def report_paths(checkout: Path) -> tuple[Path, Path]:
    """The Markdown and JSON report, next to the checkout."""
    base = checkout.parent / "rebase-report"
    return base.with_suffix(".md"), base.with_suffix(".json")


def status_of(state: RebaseState, name: str) -> str:
    """`merged-3way (a.py → src/a.py)`: a patch's status with the files upstream moved; a status
    computed past a stop (`--check`) says `[provisional]`, and whether it shares files with a patch
    left out before it (then it may be an artefact of leaving that patch out) or none."""
    status = state.statuses.get(name, "pending")
    moves = state.moves.get(name)
    text = f"{status} ({', '.join(moves)})" if moves else status
    if name in state.dropped:
        text += f" (dropped the part of {', '.join(state.dropped[name])})"
    if name in state.settled:
        text += f" ({SETTLED}: see below)"
    if name not in state.provisional or state.first_stop is None:
        return text
    text += f" [provisional: after the stop at {state.first_stop.patch or 'the overlay'}]"
    if name not in state.shared:
        return text
    shared = state.shared[name]
    return text + (
        f" (may be an artefact: shares {', '.join(shared)} with a patch left out)"
        if shared
        else " (independent: shares no file with a patch left out)"
    )


def status_lines(state: RebaseState) -> list[str]:
    """One `  name: status` line per patch replayed so far."""
    return [f"  {name}: {status_of(state, name)}" for name in state.patches if name in state.statuses]


def settled_lines(state: RebaseState) -> list[str]:
    """The conflicts the replay settled itself, under their heading, each with its evidence."""
    if not state.settled:
        return []
    lines = [f"{SETTLED} (the target already has the change, or only line endings differed):"]
    for name, evidence in state.settled.items():
        lines += [f"  {name}: {line}" for line in evidence]
    return lines


def _hunk_text(patch: Patch, rel: str) -> str:
    """The hunks of `rel` in the patch file, as written there."""
    text, out, inside = decode(patch.path.read_bytes()), [], False
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            inside = line.split(" ")[2][2:] == rel
        elif line == "-- ":
            break
        elif inside and (line.startswith("@@") or (out and line[:1] in (" ", "-", "+", "\\"))):
            out.append(line)
    return "\n".join(out)


def rename_candidates(checkout: Path, old: str, new: str, rel: str, limit: int = 5) -> list[dict]:
    """git's best guesses where `rel` went between `old` and `new` (path, similarity in percent): the
    best rename match at any similarity, then files of the same name."""
    moved = renames(checkout, old, new, threshold=1)
    paths = [moved[rel]] if rel in moved else []
    listing = git("ls-tree", "-r", "--name-only", "-z", new, cwd=checkout).stdout.split("\0")
    paths += [p for p in listing if p and Path(p).name == Path(rel).name and p != rel]
    scored = []
    for path in list(dict.fromkeys(paths))[: limit * 2]:
        score = _similarity(checkout, f"{old}:{rel}", f"{new}:{path}")
        if score is not None:
            scored.append({"path": path, "similarity": score})
    return sorted(scored, key=lambda c: -c["similarity"])[:limit]


def _similarity(checkout: Path, a: str, b: str) -> int | None:
    """git's rename similarity (percent) of two blobs, put in two one-file trees."""
    trees = []
    for spec in (a, b):
        sha = git("rev-parse", "--verify", "--quiet", spec, cwd=checkout, check=False).stdout.strip()
        if not sha:
            return None
        entry = f"100644 blob {sha}\t{'a' if not trees else 'b'}\n"
        trees.append(git("mktree", cwd=checkout, input=entry.encode()).stdout.strip())
    out = git("diff-tree", "-M1%", "--name-status", trees[0], trees[1], cwd=checkout).stdout
    match = re.match(r"R(\d+)", out)
    return int(match.group(1)) if match else 0


def conflict_details(checkout: Path, patch: Patch, state: RebaseState, missing: list[str]) -> list[dict]:
    """Per file of a stopped patch: kind (`conflict` where git left conflict stages or markers,
    `merged` where it merged cleanly, `missing-at-target`), hunks, conflicting blocks, rename
    candidates, upstream commits and what to do."""
    moved: dict[str, str] = state.renames or {}
    old, new = state.old, state.new
    conflicted = set(unmerged(checkout))
    present = [p for p in patch_paths(patch, moved) if p not in missing and (checkout / p).exists()]
    files = sorted(conflicted) + [p for p in present if p not in conflicted]
    details = []
    for rel in [*files, *missing]:
        sources = {p for p, q in moved.items() if q == rel} | {rel}
        fps = [fp for fp in patch.files if {fp.old_path, fp.new_path} & sources]
        text = (
            (checkout / rel).read_text(encoding="utf-8", errors="replace")
            if (checkout / rel).is_file()
            else ""
        )
        blocks = re.findall(r"(?ms)^<<<<<<< .*?^>>>>>>> [^\n]*$", text)
        kind = MISSING if rel in missing else "conflict" if rel in conflicted or blocks else MERGED
        candidates = rename_candidates(checkout, old, new, rel) if kind == MISSING else []
        paths = sorted(sources | {c["path"] for c in candidates})
        log = git(
            "log",
            "--format=%h %ad %s",
            "--date=short",
            f"{old}..{new}",
            "--",
            *paths,
            cwd=checkout,
            check=False,
        )
        others = [f for f in files if f != rel]
        what = (
            missing_what_to_do(rel, candidates, others, sorted(conflicted & set(others)))
            if kind == MISSING
            else WHAT_TO_DO[kind]
        )
        if kind == CONFLICT:
            ours = git("show", f"HEAD:{rel}", cwd=checkout, check=False).stdout
            hint = next((h for h in (own_words(fp, ours) for fp in fps) if h), "")
            what = f"{hint[0].upper()}{hint[1:]}; otherwise: {what}" if hint else what
        detail = {
            "file": rel,
            "kind": kind,
            "was": sorted(sources - {rel}),
            "hunks": [h.header for fp in fps for h in fp.hunks],
            "hunk_text": "\n".join(_hunk_text(patch, fp.old_path or fp.path) for fp in fps),
            "conflicts": blocks,
            "upstream_commits": log.stdout.splitlines(),
            "what_to_do": what,
        }
        if kind == MISSING:
            detail["candidates"] = candidates
        details.append(detail)
    return details


def _stop_entry(stop: Stop | None) -> dict | None:
    """`would_stop`: kind, patch, paths and one line."""
    if stop is None:
        return None
    if stop.note:
        message = stop.note
    elif stop.kind == OVERLAY_REFERENCE:
        message = f"{len(stop.references)} overlay reference(s) do not resolve"
    else:
        message = f"{stop.patch}: {stop.kind} in {', '.join(stop.missing or stop.paths) or '?'}"
    return {"kind": stop.kind, "patch": stop.patch, "paths": stop.paths, "message": message}


def report_data(
    target: Target,
    state: RebaseState,
    details: list[dict],
    mode: str,
    done: str = "",
    carries: bool = False,
    overlaps: list[dict] | None = None,
) -> dict:
    """The JSON report (fields: docs/rebase.md)."""
    first = state.stop or state.first_stop
    entries = [
        {
            "name": name,
            "status": state.statuses.get(name),
            "moves": state.moves.get(name, []),
            "provisional": name in state.provisional,
            "shares_with_left_out": state.shared.get(name, []),
            "may_be_artefact": bool(state.shared.get(name)),
            "dropped_files": state.dropped.get(name, []),
            "settled": state.settled.get(name, []),
        }
        for name in state.patches
    ]
    data = state.to_json()
    for key in ("given_source", "first_stop", "references", "unchecked", "shared"):
        data.pop(key)
    references = state.references if state.references is not None else first.references if first else []
    return {
        **data,
        "format": FORMAT,
        "mode": mode,
        "target": target.name,
        "source": state.given_source,
        "pin_source": state.source,
        "target_commit": state.new,
        "carries_over": carries,
        "patch_entries": entries,
        "would_stop": _stop_entry(first),
        "overlaps": overlaps or [],
        "overlay_references": references,
        "overlay_reference_summary": reference_summary(references),
        "overlay_references_checked": state.references is not None or bool(first and first.references),
        "unchecked_references": state.unchecked,
        "conflict_details": details,
        "resolved": bool(done),
        "outcome": done,
    }


def write_report(
    target: Target,
    state: RebaseState,
    patch_dir: Path | None = None,
    done: str = "",
    mode: str = "rebase",
    json_path: Path | None = None,
    carries: bool = False,
    overlaps: list[dict] | None = None,
) -> tuple[Path, list[dict]]:
    """Markdown + JSON rebase report (next to the checkout, or at `json_path` and beside it); return the
    Markdown path and the stopped patch's details. `done` (the outcome) marks a finished rebase."""
    details = []
    stop = state.stop
    if stop is not None and stop.kind in (CONFLICT, MISSING) and patch_dir is not None:
        details = conflict_details(target.checkout, parse_patch(patch_dir / stop.patch), state, stop.missing)
    md_path, path = (
        report_paths(target.checkout) if json_path is None else (json_path.with_suffix(".md"), json_path)
    )
    report = report_data(target, state, details, mode, done, carries or bool(done), overlaps)
    replace_file(path, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    title = "Check" if mode == "check" else "Rebase"
    lines = [f"# {title} of the series: {state.old[:12]} → {state.new[:12]}", ""]
    if done:
        lines += [f"**Resolved**: {done}", ""]
    lines += ["| # | patch | status |", "|---|---|---|"]
    for i, name in enumerate(state.patches, 1):
        lines.append(f"| {i} | {name} | {status_of(state, name)} |")
    if state.settled:
        lines += ["", f"## {SETTLED[0].upper()}{SETTLED[1:]}", ""]
        lines += [f"- {name}: {line}" for name, evidence in state.settled.items() for line in evidence]
    first = state.stop or state.first_stop
    references = (
        first.references if first is not None and first.kind == OVERLAY_REFERENCE else state.references
    )
    if references:
        after = (
            "" if first is None or first.kind == OVERLAY_REFERENCE else " (checked without the stopped patch)"
        )
        lines += ["", f"## Overlay references that do not resolve{after}", "", *reference_lines(references)]
        moves = suggested_moves(references)
        if moves:
            lines += [
                "",
                "Suggested `overlay_moves` (patches/config.toml, this target):",
                "",
                *[f"- `{m}`" for m in moves],
            ]
        lines += ["", f"What to do: {WHAT_TO_DO[OVERLAY_REFERENCE]}"]
    elif references is None and not done:
        lines += ["", "Overlay references: not checked (the run stopped before the replay reached them)."]
    if state.unchecked:
        lines += ["", f"## {UNCHECKED[0].upper()}{UNCHECKED[1:]}", "", *reference_lines(state.unchecked)]
    for d in details:
        title = SECTION.get(d["kind"], "Conflict in")
        lines += ["", f"## {title} `{d['file']}` ({stop.patch})", ""]
        if d["was"]:
            lines += [f"Moved by upstream: {', '.join(d['was'])} → {d['file']}", ""]
        # a section with nothing to show is left out (its "What to do" says what the absence means)
        if d["hunks"]:
            lines += ["Hunks of the patch: " + ", ".join(f"`{h}`" for h in d["hunks"]), ""]
        if d["kind"] == MISSING and d["hunk_text"]:
            lines += ["```diff", d["hunk_text"], "```", ""]
        if d.get("candidates"):
            lines += ["Where git thinks the code went:", ""]
            lines += [f"- `{c['path']}` ({c['similarity']} % similar)" for c in d["candidates"]] + [""]
        if d["upstream_commits"]:
            where = "the file (and its candidates)" if d["kind"] == MISSING else "the file"
            lines += [f"Upstream commits touching {where} between the pins:", ""]
            lines += [f"- {c}" for c in d["upstream_commits"]] + [""]
        for block in d["conflicts"]:
            lines += ["```", block, "```", ""]
        lines += [f"What to do: {d['what_to_do']}"]
    replace_file(md_path, "\n".join(lines) + "\n")
    return md_path, details


def stop_message(state: RebaseState, details: list[dict], report: Path) -> str:
    """What stopped, the statuses so far, where the report is and what to do next."""
    stop = state.stop
    assert stop is not None
    if stop.kind == OVERLAY_REFERENCE:
        lines = [f"The overlay's references into upstream {state.new[:12]} do not resolve:"]
        lines += reference_lines(stop.references)
        moves = suggested_moves(stop.references)
        if moves:
            lines.append(
                "Suggested `overlay_moves` for this target in patches/config.toml: " + ", ".join(moves)
            )
    else:
        what = "modifies a file missing at" if stop.kind == MISSING else "conflicts with"
        lines = [f"Patch {stop.patch} {what} upstream {state.new[:12]}:"]
        for d in details:
            was = f" (moved from {', '.join(d['was'])})" if d["was"] else ""
            if d["kind"] == MISSING:
                best = ", ".join(f"{c['path']} {c['similarity']} %" for c in d["candidates"]) or "none"
                lines.append(f"  {d['file']}: missing at the target; git's best candidates: {best}")
            else:
                lines.append(f"  {d['file']}{was}: {'merged cleanly' if d['kind'] == MERGED else 'conflict'}")
    lines += ["Statuses so far:", *status_lines(state), *settled_lines(state), f"Report: {report}"]
    steps = [d["what_to_do"] for d in details if d["kind"] == stop.kind] or [WHAT_TO_DO.get(stop.kind, "")]
    lines += [f"Next: {step}" for step in dict.fromkeys(steps)]
    return "\n".join(lines)
