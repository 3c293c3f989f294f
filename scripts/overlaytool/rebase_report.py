"""The rebase report (`upstream/rebase-report.md` and `.json`) and the status lines printed at every stop."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .gitcmd import git
from .patchfile import Patch, decode
from .replay import MISSING, RENAME_THRESHOLD, patch_paths, unmerged

WHAT_TO_DO = {
    "conflict": "Resolve the conflict markers in the checkout, then `nox -s rebase -- --continue`; "
    "or `--skip` to drop the patch from the series; or `--abort` to go back to the old pin.",
    MISSING: "The target has no such file: upstream deleted it, or moved and rewrote it beyond rename "
    f"detection ({RENAME_THRESHOLD} % similarity). Apply the hunks to the file that now holds that code "
    "(the candidates below are git's best matches), then `nox -s rebase -- --continue`; or `--skip` "
    "to drop the patch from the series; or `--abort`.",
}


def report_paths(checkout: Path) -> tuple[Path, Path]:
    """The Markdown and JSON report, next to the checkout."""
    base = checkout.parent / "rebase-report"
    return base.with_suffix(".md"), base.with_suffix(".json")


def remove_report(checkout: Path) -> None:
    for path in report_paths(checkout):
        path.unlink(missing_ok=True)


def status_of(state: dict, name: str) -> str:
    """`merged-3way (a.py → src/a.py)`: a patch's status with the files upstream moved."""
    status = state["statuses"].get(name, "pending")
    moves = state.get("moves", {}).get(name)
    return f"{status} ({', '.join(moves)})" if moves else status


def status_lines(state: dict) -> list[str]:
    """One `  name: status` line per patch replayed so far."""
    return [f"  {name}: {status_of(state, name)}" for name in state["patches"] if name in state["statuses"]]


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
    """git's best guesses where `rel` went between `old` and `new`: path and similarity (percent).

    The best match of git's rename detection at any similarity, then files of the same name,
    each scored by git against the old file."""
    out = git("diff", "-M1%", "--name-status", "-z", "--diff-filter=R", old, new, cwd=checkout).stdout
    fields = [f for f in out.split("\0") if f]
    paths = [fields[i + 2] for i in range(0, len(fields) - 2, 3) if fields[i + 1] == rel]
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


def conflict_details(checkout: Path, patch: Patch, state: dict, missing: list[str]) -> list[dict]:
    """Per file of a stopped patch: kind, hunks, conflicting blocks, rename candidates, upstream commits."""
    moved: dict[str, str] = state["renames"]
    old, new = state["old"], state["new"]
    files = unmerged(checkout) or [p for p in patch_paths(patch, moved) if p not in missing]
    details = []
    for rel in [*files, *missing]:
        kind = MISSING if rel in missing else "conflict"
        sources = {p for p, q in moved.items() if q == rel} | {rel}
        fps = [fp for fp in patch.files if {fp.old_path, fp.new_path} & sources]
        text = (
            (checkout / rel).read_text(encoding="utf-8", errors="replace")
            if (checkout / rel).is_file()
            else ""
        )
        blocks = re.findall(r"(?ms)^<<<<<<< .*?^>>>>>>> [^\n]*$", text)
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
        detail = {
            "file": rel,
            "kind": kind,
            "was": sorted(sources - {rel}),
            "hunks": [h.header for fp in fps for h in fp.hunks],
            "hunk_text": "\n".join(_hunk_text(patch, fp.old_path or fp.path) for fp in fps),
            "conflicts": blocks,
            "upstream_commits": log.stdout.splitlines(),
            "what_to_do": WHAT_TO_DO[kind],
        }
        if kind == MISSING:
            detail["candidates"] = candidates
        details.append(detail)
    return details


def write_report(checkout: Path, state: dict, details: list[dict] | None = None, done: str = "") -> Path:
    """Markdown + JSON rebase report next to the checkout; returns the Markdown path.

    `done` (a one-line outcome) marks a finished rebase: the report then describes no open conflict."""
    md_path, json_path = report_paths(checkout)
    report = {**state, "conflict_details": details or [], "resolved": bool(done), "outcome": done}
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = [f"# Rebase of the series: {state['old'][:12]} → {state['new'][:12]}", ""]
    if done:
        lines += [f"**Resolved**: {done}", ""]
    lines += ["| # | patch | status |", "|---|---|---|"]
    for i, name in enumerate(state["patches"], 1):
        lines.append(f"| {i} | {name} | {status_of(state, name)} |")
    for d in details or []:
        title = "File missing at the target" if d["kind"] == MISSING else "Conflict in"
        lines += ["", f"## {title} `{d['file']}` ({state['patches'][state['next']]})", ""]
        if d["was"]:
            lines += [f"Moved by upstream: {', '.join(d['was'])} → {d['file']}", ""]
        lines.append("Hunks of the patch: " + (", ".join(f"`{h}`" for h in d["hunks"]) or "none"))
        if d["kind"] == MISSING:
            lines += ["", "```diff", d["hunk_text"], "```", "", "Where git thinks the code went:", ""]
            lines += [f"- `{c['path']}` ({c['similarity']} % similar)" for c in d["candidates"]] or [
                "- (no file of the target resembles it: upstream deleted it)"
            ]
        where = "the file (and its candidates)" if d["kind"] == MISSING else "the file"
        lines += ["", f"Upstream commits touching {where} between the pins:", ""]
        lines += [f"- {c}" for c in d["upstream_commits"]] or ["- (none)"]
        for block in d["conflicts"]:
            lines += ["", "```", block, "```"]
        lines += ["", f"What to do: {d['what_to_do']}"]
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md_path


def stop_message(state: dict, details: list[dict], report: Path) -> str:
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
