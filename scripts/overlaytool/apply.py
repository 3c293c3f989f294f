"""`apply`: pinned checkout + patch series (zero fuzz, zero offset) + overlay, atomically.

Every patch is verified and applied to a private git index first; the work tree is written only
when the whole series and the overlay are known to fit. A stamp in the checkout's git directory
records what was written (content and git mode), so a rerun is a no-op and any later edit of
those files (or of any tracked file) is detected and never discarded without `--force`.

Interruption and company: the whole run holds the checkout's lock (lock.py); a fresh checkout is
cloned into a private temporary directory and renamed into place; before the first work-tree
write a journal (journal.py) records every path and the states the run may leave there, so a
rerun after a kill at any point recognises its own writes and completes the job.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import OverlayError
from .cache import mirror_lock, mirror_path, require_cached
from .checkout import (
    Blob,
    checkout_lock,
    clear_stale_index_lock,
    current_state,
    gitdir,
    index_env,
    modified,
    overlay_blob,
    overlay_files,
    put,
    read_stamp,
    remove_leftover_tmp,
    same_state,
    state_dir,
    write_atomic,
    write_stamp,
)
from .diagnose import diagnose_patch
from .faults import kill_point
from .gitcmd import git, git_out, has_commit
from .gitlocks import clear_stale_index_lock_of_checkout, run_index_git
from .journal import clear_journal, owns, read_journal, write_journal
from .lock import hold
from .patchfile import Patch
from .series import load_series
from .targets import Target


@dataclass
class Outcome:
    """What `apply` did to one target."""

    target: Target
    up_to_date: bool
    patches: list[Patch] = field(default_factory=list)
    overlay: list[str] = field(default_factory=list)


def _digest(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> str:
    h = hashlib.sha256(target.pin.commit.encode())
    series = target.patch_dir / "series"
    h.update(series.read_bytes() if series.exists() else b"")
    for patch in patches:
        h.update(patch.name.encode() + b"\0" + patch.text)
    for rel, path in overlay.items():
        blob = overlay_blob(path)
        h.update(rel.encode() + b"\0" + blob.mode.encode() + b"\0" + blob.data)
    return h.hexdigest()


def ensure_checkout(target: Target) -> None:
    """Clone the mirror at the pinned commit where no checkout exists yet.

    The clone is made in a private directory under `clone_scratch` and renamed into place, all
    under the scratch's lock: concurrent runs never share a half-made `.git` (the first one clones,
    the others find the checkout), and a run killed half-way leaves its partial clone where the
    next run, holding the lock, removes it (with the scratch) — never inside a checkout's work tree.
    """
    checkout = target.checkout
    scratch = clone_scratch(checkout)
    if (checkout / ".git").exists() and not scratch.exists():
        return
    mirror = require_cached(target.pin)
    checkout.parent.mkdir(parents=True, exist_ok=True)
    with hold(scratch / CLONE_LOCK, "apply", f"{target.label}:clone"):
        if not (checkout / ".git").exists():  # else: cloned by a run we waited for, or by a killed one
            if checkout.exists() and any(checkout.iterdir()):
                raise OverlayError(f"{checkout} exists but is not a git checkout; move it away first.")
            remove_partial_clones(scratch)
            _remove_dead_partials(checkout)
            partial = Path(tempfile.mkdtemp(prefix="partial-", dir=scratch))
            with mirror_lock(target.pin, "apply", shared=True):
                git("clone", "--quiet", "--no-checkout", str(mirror), str(partial))
            kill_point(f"{target.label}:clone")
            git("checkout", "--quiet", "--detach", target.pin.commit, cwd=partial)
            kill_point(f"{target.label}:clone-checkout")
            os.rename(partial, checkout)  # onto a missing or empty directory only
            kill_point(f"{target.label}:checkout")
        with contextlib.suppress(FileNotFoundError):  # a run we waited for removed it already
            shutil.rmtree(scratch)  # the lock file too: a run waiting on it finds the checkout made


def _remove_dead_partials(checkout: Path) -> None:
    """Temporary clones that earlier versions made beside the checkout (their pid is in the name)."""
    for partial in checkout.parent.glob(f".{checkout.name}.partial-*"):
        pid = partial.name.removeprefix(f".{checkout.name}.partial-").split("-")[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(partial, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


CLONE_LOCK = "lock"


def clone_scratch(checkout: Path) -> Path:
    """Where partial clones of `checkout` are made: inside the enclosing checkout's git directory
    for a nested one (mmdetection3d in StreamPETR: never in a work tree `git status` sees), else
    the hidden `.<name>.clone/` beside it."""
    if (checkout.parent / ".git").exists():
        return state_dir(checkout.parent) / f"clone-{checkout.name}"
    return checkout.parent / f".{checkout.name}.clone"


def remove_partial_clones(scratch: Path) -> None:
    """Every partial clone a killed run left in `scratch` (call with its lock held)."""
    for entry in scratch.iterdir():
        if entry.name != CLONE_LOCK:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _ensure_pin_commit(target: Target) -> None:
    """A checkout made for an older pin gets the pinned commit from the cache mirror."""
    if not has_commit(target.checkout, target.pin.commit):
        fetch_cache_refs(target, "apply")


def fetch_cache_refs(target: Target, holder: str) -> None:
    """Every ref of the cache mirror into the checkout (under refs/streampetr-dali/cache/)."""
    with mirror_lock(target.pin, holder, shared=True):
        mirror = str(mirror_path(target.pin))
        git("fetch", "--quiet", mirror, "+refs/*:refs/streampetr-dali/cache/*", cwd=target.checkout)


def exclude_nested(parent: Target, child: Target) -> None:
    """Keep a nested checkout (mmdetection3d inside StreamPETR) out of the parent's `git status`."""
    try:
        rel = child.checkout.relative_to(parent.checkout).as_posix()
    except ValueError:
        return
    exclude = gitdir(parent.checkout) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with checkout_lock(parent.checkout, "apply"):  # read-modify-write: two runs must not both read
        lines = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
        if f"/{rel}/" in lines:
            return
        write_atomic(exclude, "\n".join([*lines, f"/{rel}/"]) + "\n")
    kill_point(f"{parent.label}:exclude")


def build_result(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> dict[str, Blob | None]:
    """Apply the series to a private index of the pinned tree; return path → content (None = deleted).

    Raises OverlayError naming the patch, file, hunk and reason as soon as one does not fit exactly.
    """
    checkout = target.checkout
    env = index_env(checkout)
    git("read-tree", target.pin.commit, cwd=checkout, env=env)
    touched: set[str] = set()
    for number, patch in enumerate(patches, 1):
        problem = diagnose_patch(patch, lambda p: _index_data(checkout, env, p))
        if problem is None:
            proc = git(
                "apply", "--cached", "--check", "-v", str(patch.path), cwd=checkout, env=env, check=False
            )
            if proc.returncode != 0 or "offset" in proc.stderr or "fuzz" in proc.stderr:
                problem = f"git apply refused it:\n{proc.stderr.strip()}"
        if problem is not None:
            raise OverlayError(
                f"Patch {number}/{len(patches)} {patch.name} does not apply to {target.label} "
                f"{target.pin.commit[:12]} with zero fuzz and zero offset.\n{problem}\n"
                f"{_upstream_history(target, patch)}\n"
                f"Nothing was changed in {checkout}."
            )
        git("apply", "--cached", str(patch.path), cwd=checkout, env=env)
        touched.update(fp.path for fp in patch.files)
        touched.update(fp.old_path for fp in patch.files if fp.old_path)
    tracked = set(git_out("ls-tree", "-r", "--name-only", target.pin.commit, cwd=checkout).splitlines())
    result = {p: _index_blob(checkout, env, p) for p in sorted(touched)}
    for rel, path in overlay.items():
        if rel in tracked or rel in result:
            owner = "tracked by upstream" if rel in tracked else "created by a patch"
            raise OverlayError(
                f"overlay/{rel} would shadow {rel}, which is {owner} at {target.pin.commit[:12]}.\n"
                "overlay/ may only add new paths; change an upstream file with a patch instead."
            )
        result[rel] = overlay_blob(path)
    return result


def _index_blob(checkout: Path, env: dict[str, str], path: str) -> Blob | None:
    """Mode and content of `path` in the private index (None when the series deletes it)."""
    entry = git_out("ls-files", "--stage", "--", path, cwd=checkout, env=env)
    if not entry:
        return None
    mode, sha = entry.split()[:2]
    return Blob(mode, git("cat-file", "blob", sha, cwd=checkout, text=False).stdout)


def _index_data(checkout: Path, env: dict[str, str], path: str) -> bytes | None:
    blob = _index_blob(checkout, env, path)
    return None if blob is None else blob.data


def pin_blob(target: Target, rel: str) -> Blob | None:
    """Mode and content of `rel` in the pinned commit (None when upstream does not have it)."""
    entry = git_out("ls-tree", target.pin.commit, "--", rel, cwd=target.checkout)
    if not entry or entry.split()[1] != "blob":
        return None
    mode, _, sha = entry.split("\t")[0].split()
    return Blob(mode, git("cat-file", "blob", sha, cwd=target.checkout, text=False).stdout)


def _upstream_history(target: Target, patch: Patch) -> str:
    """Upstream commits (in the cache mirror) that touched the patch's files after the pin."""
    mirror = mirror_path(target.pin)
    paths = sorted({fp.path for fp in patch.files})
    proc = git(
        "log", "--format=  %h %ad %s", "--date=short", "--branches", "--not", target.pin.commit,
        "--", *paths, cwd=mirror, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        return "Upstream history is not available in the cache."
    listing = proc.stdout.rstrip() or "  (none in the cache)"
    return f"Upstream commits touching {', '.join(paths)} since the pin:\n{listing}"


def local_edits(
    target: Target, stamp: dict | None, journal: dict | None, result: dict[str, Blob | None], head: str
) -> list[str]:
    """Paths whose state is neither what the last apply left nor what a killed run journaled."""
    checkout = target.checkout
    edits = []
    heads = {stamp["commit"] if stamp else target.pin.commit, *(journal["heads"] if journal else ())}
    if head not in heads:
        expected = stamp["commit"] if stamp else target.pin.commit
        edits.append(f"HEAD is {head[:12]}, expected {expected[:12]} (commits or checkouts made by hand)")
    changed = modified(checkout)
    owned = dict(stamp["files"]) if stamp else {}
    for rel in sorted(changed - owned.keys()):
        if not owns(journal, rel, current_state(checkout, rel)):
            edits.append(rel)
    for rel, recorded in sorted(owned.items()):
        state = current_state(checkout, rel)
        if not same_state(recorded, state) and not owns(journal, rel, state):
            edits.append(rel)
    for rel, want in result.items():
        state = current_state(checkout, rel)
        if rel in owned or rel in changed or state is None or (want is not None and state == want.state):
            continue
        if owns(journal, rel, state):
            continue
        if git("ls-files", "--error-unmatch", rel, cwd=checkout, check=False).returncode:
            edits.append(f"{rel} (untracked file the overlay would overwrite)")
    return edits


def plan_writes(
    target: Target,
    stamp: dict | None,
    journal: dict | None,
    result: dict[str, Blob | None],
    head: str,
    force: bool,
) -> dict[str, Blob | None]:
    """Every path whose work-tree state must change, with the state it gets (None = delete).

    The candidates: what the series and overlay write, what the last apply wrote, what a killed
    run journaled, what differs between HEAD and the pin, and (with force) every modified file.
    """
    checkout = target.checkout
    paths = set(result) | set(stamp["files"] if stamp else ()) | set(journal["paths"] if journal else ())
    if head != target.pin.commit:
        diff = git_out("diff", "--name-only", "--no-renames", "-z", head, target.pin.commit, cwd=checkout)
        paths |= {p for p in diff.split("\0") if p}
    if force:
        paths |= modified(checkout)
    plan = {}
    for rel in sorted(paths):
        want = result[rel] if rel in result else pin_blob(target, rel)
        if current_state(checkout, rel) != (None if want is None else want.state):
            plan[rel] = want
    return plan


def apply_target(target: Target, force: bool = False) -> Outcome:
    """Bring one target to pin + series + overlay. See the module docstring for the guarantees."""
    patches = load_series(target.patch_dir)
    overlay = overlay_files(target.overlay_dir)
    ensure_checkout(target)  # clones when missing (checking the cache), clears a killed clone's scratch
    require_cached(target.pin)
    with checkout_lock(target.checkout, "apply"):
        _ensure_pin_commit(target)
        return _apply_locked(target, patches, overlay, force)


def _apply_locked(target: Target, patches: list[Patch], overlay: dict[str, Path], force: bool) -> Outcome:
    checkout, label, pin = target.checkout, target.label, target.pin.commit
    clear_stale_index_lock(checkout)
    clear_stale_index_lock_of_checkout(checkout)
    journal = read_journal(checkout)
    if journal:
        remove_leftover_tmp(checkout, list(journal["paths"]))
    stamp = read_stamp(checkout)
    digest = _digest(target, patches, overlay)
    result = build_result(target, patches, overlay)
    kill_point(f"{label}:index")
    head = git_out("rev-parse", "HEAD", cwd=checkout)
    edits = local_edits(target, stamp, journal, result, head)
    if edits and not force:
        listing = "\n  ".join(edits)
        raise OverlayError(
            f"{checkout} has local edits that apply would discard:\n  {listing}\n"
            "Keep them with `nox -s refresh` (turns them into patches), or discard them with "
            "`nox -s apply -- --force`."
        )
    if not edits and journal is None and stamp and stamp["digest"] == digest and head == pin:
        return Outcome(target, up_to_date=True, patches=patches, overlay=list(overlay))
    plan = plan_writes(target, stamp, journal, result, head, force)
    write_journal(checkout, _journal(checkout, journal, plan, head, pin))
    kill_point(f"{label}:journal")
    if head != pin:
        run_index_git(checkout, label, "reset", "--quiet", pin)
        kill_point(f"{label}:head")
    for i, rel in enumerate(plan, 1):
        put(checkout / rel, plan[rel], step=f"{label}:write-{i}")
        kill_point(f"{label}:write-{i}")
    files = {rel: None if blob is None else blob.state for rel, blob in result.items()}
    write_stamp(checkout, {"commit": pin, "digest": digest, "files": files})
    kill_point(f"{label}:stamp")
    clear_journal(checkout)
    return Outcome(target, up_to_date=False, patches=patches, overlay=list(overlay))


def _journal(checkout: Path, old: dict | None, plan: dict[str, Blob | None], head: str, pin: str) -> dict:
    """The new journal: for each planned path, its state now and the state it gets (plus an older
    journal's states, in case its run was killed before reaching this path)."""
    paths = {rel: list(states) for rel, states in (old["paths"] if old else {}).items()}
    for rel, want in plan.items():
        states = paths.setdefault(rel, [])
        for state in (current_state(checkout, rel), None if want is None else want.state):
            if state not in states:
                states.append(state)
    heads = sorted({head, pin, *(old["heads"] if old else ())})
    return {"commit": pin, "heads": heads, "paths": paths}


def apply_all(
    targets: list[Target], chosen: list[Target] | None = None, force: bool = False
) -> list[Outcome]:
    """Apply the `chosen` targets (default: all) in the config's order, the outer checkout first.

    A target checked out inside another's needs that one checked out first."""
    chosen = targets if chosen is None else chosen
    for target in chosen:
        for outer in targets:
            nested = outer is not target and target.checkout.is_relative_to(outer.checkout)
            if nested and outer not in chosen and not (outer.checkout / ".git").exists():
                raise OverlayError(
                    f"{target.name} is checked out inside the checkout of {outer.name} ({outer.checkout}), "
                    f"which does not exist yet: apply {outer.name} first (`--target {outer.name}`), "
                    "or every target."
                )
    outcomes = []
    for target in chosen:
        outcomes.append(apply_target(target, force=force))
        place = targets.index(target)
        for inner in targets[place + 1 :]:
            exclude_nested(target, inner)
        for outer in targets[:place]:
            if outer not in chosen and (outer.checkout / ".git").exists():
                exclude_nested(outer, target)
    return outcomes
