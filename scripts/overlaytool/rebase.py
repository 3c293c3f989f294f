"""`rebase`: move the patch series to a new upstream commit, one patch at a time.

The series becomes commits on the old pin, then each patch is replayed onto the target and gets a
status: `clean` (applies exactly), `offset` (applies with shifted lines), `merged-3way` (needed a
three-way merge, e.g. upstream renamed or edited nearby lines), `already-upstream` (upstream
contains the change: dropped) or `conflict` (stops: a Markdown + JSON report names the patch, file,
hunk, conflicting lines and the upstream commits that touched the file; resolve in the checkout,
then `--continue`, or `--abort`). On success the pin moves, the series is re-exported and a
range-diff of the old and new series is printed.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from . import OverlayError
from .apply import apply_target, ensure_checkout, fetch_cache_refs
from .cache import fetch, mirror_path
from .checkout import checkout_lock, current, state_dir
from .diagnose import diagnose_patch
from .gitcmd import TOOL_IDENTITY, git, git_out
from .pins import write_commit
from .refresh import commit_series, export_commits
from .series import Patch, load_series, parse_patch
from .targets import Target

# Every status a patch can get in the rebase report (see the module docstring).
CLEAN, OFFSET, MERGED_3WAY, ALREADY_UPSTREAM, CONFLICT, RESOLVED = (
    "clean",
    "offset",
    "merged-3way",
    "already-upstream",
    "conflict",
    "conflict (resolved)",
)
FULL_ID = re.compile(r"^[0-9a-f]{40}$")
BEFORE_REF = "refs/streampetr-dali/before-rebase"


def _state_path(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase.json"


def _report_paths(target: Target) -> tuple[Path, Path]:
    base = target.checkout.parent / "rebase-report"
    return base.with_suffix(".md"), base.with_suffix(".json")


def resolve(target: Target, ref: str, source: str | None) -> str:
    """The full commit id of `ref` in the cache mirror (seeded from `source` first if given).

    A full commit id is fetched by id, so it is found even when no branch of `source` points at it.
    """
    want = [ref] if FULL_ID.match(ref) else []
    mirror = fetch(target.pin, source, want) if source else mirror_path(target.pin)
    proc = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=mirror, check=False)
    if proc.returncode != 0:
        raise OverlayError(
            f"{ref!r} is not a commit in the cache mirror {mirror}.\n"
            "Fetch it first (`nox -s fetch`), or pass `--from <path-or-url>` of a repository that has it."
        )
    return proc.stdout.strip()


def _data(checkout: Path, rel: str) -> bytes | None:
    blob = current(checkout, rel)
    return None if blob is None else blob.data


def replay(target: Target, patch: Patch) -> str:
    """Replay one patch onto HEAD as a commit; return its status (`conflict` leaves `git am` stopped)."""
    checkout = target.checkout
    path = str(patch.path)
    if git("apply", "--check", "-R", path, cwd=checkout, check=False).returncode == 0:
        return ALREADY_UPSTREAM
    if git("apply", "--check", path, cwd=checkout, check=False).returncode == 0:
        exact = diagnose_patch(patch, lambda rel: _data(checkout, rel)) is None
        git("am", "--quiet", "--keep-cr", path, cwd=checkout, env=TOOL_IDENTITY)
        return CLEAN if exact else OFFSET
    if (
        git("am", "--quiet", "--keep-cr", "-3", path, cwd=checkout, env=TOOL_IDENTITY, check=False).returncode
        == 0
    ):
        return MERGED_3WAY
    return CONFLICT


def conflict_details(target: Target, patch: Patch, old: str, new: str) -> list[dict]:
    """Per conflicted file: hunks of the patch, conflicting lines, upstream commits old..new."""
    checkout = target.checkout
    unmerged = git_out("diff", "--name-only", "--diff-filter=U", cwd=checkout).split()
    files = unmerged or [fp.path for fp in patch.files]
    details = []
    for rel in files:
        text = (checkout / rel).read_text(errors="replace") if (checkout / rel).is_file() else ""
        blocks = re.findall(r"(?ms)^<<<<<<< .*?^>>>>>>> [^\n]*$", text)
        hunks = [h.header for fp in patch.files if rel in (fp.path, fp.old_path) for h in fp.hunks]
        log = git(
            "log", "--format=%h %ad %s", "--date=short", f"{old}..{new}", "--", rel, cwd=checkout, check=False
        )
        details.append(
            {"file": rel, "hunks": hunks, "conflicts": blocks, "upstream_commits": log.stdout.splitlines()}
        )
    return details


def write_report(target: Target, state: dict, details: list[dict] | None = None) -> Path:
    """Markdown + JSON rebase report next to the checkout; returns the Markdown path."""
    md_path, json_path = _report_paths(target)
    report = {**state, "conflict_details": details or []}
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# Rebase of the series: {state['old'][:12]} → {state['new'][:12]}",
        "",
        "| # | patch | status |",
    ]
    lines.append("|---|---|---|")
    for i, name in enumerate(state["patches"], 1):
        lines.append(f"| {i} | {name} | {state['statuses'].get(name, 'pending')} |")
    for d in details or []:
        lines += ["", f"## Conflict in `{d['file']}` ({state['patches'][state['next']]})", ""]
        lines.append("Hunks of the patch: " + (", ".join(f"`{h}`" for h in d["hunks"]) or "none"))
        lines += ["", "Upstream commits touching the file between the pins:", ""]
        lines += [f"- {c}" for c in d["upstream_commits"]] or ["- (none)"]
        for block in d["conflicts"]:
            lines += ["", "```", block, "```"]
    md_path.write_text("\n".join(lines) + "\n")
    return md_path


def _save(target: Target, state: dict) -> None:
    _state_path(target).write_text(json.dumps(state, indent=1) + "\n")


def start(target: Target, ref: str, source: str | None = None) -> list[str]:
    """Begin a rebase of the series onto `ref`; returns the printed report lines."""
    if (target.checkout / ".git").exists() and _state_path(target).exists():
        raise OverlayError("A rebase is already in progress: `nox -s rebase -- --continue` or `-- --abort`.")
    new = resolve(target, ref, source)
    checkout = target.checkout
    ensure_checkout(target)  # the checkout the lock lives in
    with checkout_lock(checkout, "rebase"):
        apply_target(target)  # refuses (naming files) if the checkout has local edits
        fetch_cache_refs(target, "rebase")
        return _start_locked(target, new)


def _start_locked(target: Target, new: str) -> list[str]:
    checkout = target.checkout
    commit_series(target)
    git("update-ref", BEFORE_REF, "HEAD", cwd=checkout)
    git("checkout", "--quiet", "--detach", new, cwd=checkout)
    patches = [p.name for p in load_series(target.patch_dir)]
    state = {"old": target.pin.commit, "new": new, "patches": patches, "statuses": {}, "next": 0}
    return proceed(target, state)


def proceed(target: Target, state: dict) -> list[str]:
    """Replay the remaining patches; stop at a conflict, finish when all are done."""
    while state["next"] < len(state["patches"]):
        name = state["patches"][state["next"]]
        patch = parse_patch(target.patch_dir / name)
        status = replay(target, patch)
        state["statuses"][name] = status
        if status == CONFLICT:
            _save(target, state)
            report = write_report(target, state, conflict_details(target, patch, state["old"], state["new"]))
            raise OverlayError(
                f"Patch {name} conflicts with upstream {state['new'][:12]}. Report: {report}\n"
                f"Next steps: resolve the conflict markers in {target.checkout}, then "
                "`nox -s rebase -- --continue`; or `nox -s rebase -- --abort` to go back to the old pin."
            )
        state["next"] += 1
    return finish(target, state)


def resume(target: Target) -> list[str]:
    """`--continue`: commit the resolved patch and go on."""
    state = _load(target)
    with checkout_lock(target.checkout, "rebase"):
        return _resume_locked(target, state)


def _resume_locked(target: Target, state: dict) -> list[str]:
    checkout = target.checkout
    name = state["patches"][state["next"]]
    files = [fp.path for fp in parse_patch(target.patch_dir / name).files]
    marked = [
        f
        for f in files
        if (checkout / f).is_file() and "<<<<<<< " in (checkout / f).read_text(errors="replace")
    ]
    if marked:
        raise OverlayError(f"Conflict markers remain in: {', '.join(marked)}. Resolve them, then --continue.")
    git("add", "-A", "--", *[f for f in files if (checkout / f).exists()], cwd=checkout)
    proc = git("am", "--continue", cwd=checkout, env=TOOL_IDENTITY, check=False)
    if proc.returncode != 0 and "No changes" in proc.stdout + proc.stderr:
        git("am", "--skip", cwd=checkout, env=TOOL_IDENTITY)
        state["statuses"][name] = ALREADY_UPSTREAM
    elif proc.returncode != 0:
        raise OverlayError(f"git am --continue failed:\n{proc.stdout}{proc.stderr}")
    else:
        state["statuses"][name] = RESOLVED
    state["next"] += 1
    return proceed(target, state)


def abort(target: Target) -> str:
    """`--abort`: drop the rebase and restore the old pin with the old series applied."""
    state = _load(target)
    checkout = target.checkout
    with checkout_lock(checkout, "rebase"):
        git("am", "--abort", cwd=checkout, check=False)
        git("checkout", "--quiet", "--force", "--detach", state["old"], cwd=checkout)
        _cleanup(target)
        apply_target(target, force=True)
    return f"rebase aborted: {target.label} is back at {state['old'][:12]} with the old series applied"


def _load(target: Target) -> dict:
    if not (target.checkout / ".git").exists():
        raise OverlayError("No rebase is in progress.")
    path = _state_path(target)
    if not path.exists():
        raise OverlayError("No rebase is in progress.")
    return json.loads(path.read_text())


def _cleanup(target: Target) -> None:
    _state_path(target).unlink(missing_ok=True)
    git("update-ref", "-d", BEFORE_REF, cwd=target.checkout, check=False)


def finish(target: Target, state: dict) -> list[str]:
    """Move the pin, re-export the series, show the range-diff, re-apply as work-tree changes."""
    checkout = target.checkout
    old_patches = load_series(target.patch_dir)
    date = git_out("log", "-1", "--format=%cd", "--date=short", state["new"], cwd=checkout)
    write_commit(target.pin, state["new"], date)
    moved = replace(target, pin=replace(target.pin, commit=state["new"], date=date))
    export_commits(moved, old_patches, base=state["new"])
    range_diff = git(
        "range-diff", f"{state['old']}..{BEFORE_REF}", f"{state['new']}..HEAD", cwd=checkout, check=False
    ).stdout
    report = write_report(target, state)
    _cleanup(target)
    apply_target(moved, force=True)
    lines = [f"{target.label}: {state['old'][:12]} → {state['new'][:12]} ({date}); report: {report}"]
    lines += [f"  {name}: {state['statuses'][name]}" for name in state["patches"]]
    return [*lines, "range-diff of the old and new series:", range_diff.rstrip() or "  (identical)"]
