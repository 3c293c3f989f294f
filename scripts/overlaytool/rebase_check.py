"""`rebase --check`: replay the series onto a commit in a scratch clone and say whether it carries
over. The checkout, the pin, the series and the cache's refs stay as they are."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from . import OverlayError
from .cache import mirror_lock
from .checkout import state_dir
from .commit_export import export_commits
from .fetch import drop_keep_ref, require_cached
from .gitcmd import TOOL_IDENTITY, git, git_out
from .overlay import overlay_files
from .patchfile import parse_patch
from .rebase_report import status_lines
from .rebase_target import resolve
from .replay import CONFLICT, MISSING, renames, replay
from .scratch import remove_dead_scratch
from .series import load_series
from .series_index import build_result
from .targets import Target


def dry_run(target: Target, ref: str, source: str | None = None) -> tuple[list[str], bool]:
    """`--check`: replay the series onto `ref` in a scratch clone; the lines to print and whether
    the series carries over. The checkout, the pin, patches/ and the cache's refs stay as they are."""
    new, keep_created = resolve(target, ref, source)
    mirror = require_cached(target.pin)
    target.checkout.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_scratch(target.checkout, "rebase-check")
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
