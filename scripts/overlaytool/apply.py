"""`apply`: pinned checkout + patch series (zero fuzz, zero offset) + overlay, atomically.

Every patch is verified and applied to a private git index first; the work tree is written only
when the whole series and the overlay are known to fit, and restored if writing fails. A stamp in
the checkout's git directory records what was written, so a rerun is a no-op and any later edit
of those files (or of any tracked file) is detected and never discarded without `--force`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import OverlayError
from .cache import require_cached
from .diagnose import diagnose_patch
from .gitcmd import blob_sha, git, git_out
from .series import Patch, load_series
from .targets import Target

STAMP_DIR = "streampetr-dali"
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}


@dataclass
class Outcome:
    """What `apply` did to one target."""

    target: Target
    up_to_date: bool
    patches: list[Patch] = field(default_factory=list)
    overlay: list[str] = field(default_factory=list)


def overlay_files(overlay_dir: Path | None) -> dict[str, Path]:
    """Overlay files by their path relative to the upstream root (caches and bytecode skipped)."""
    if overlay_dir is None or not overlay_dir.is_dir():
        return {}
    files = {}
    for path in sorted(overlay_dir.rglob("*")):
        rel = path.relative_to(overlay_dir)
        if path.is_file() and not SKIP_NAMES.intersection(rel.parts) and path.suffix != ".pyc":
            files[rel.as_posix()] = path
    return files


def _gitdir(checkout: Path) -> Path:
    return Path(git_out("rev-parse", "--absolute-git-dir", cwd=checkout))


def _stamp_path(checkout: Path) -> Path:
    return _gitdir(checkout) / STAMP_DIR / "stamp.json"


def _read_stamp(checkout: Path) -> dict | None:
    path = _stamp_path(checkout)
    return json.loads(path.read_text()) if path.exists() else None


def _digest(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> str:
    h = hashlib.sha256(target.pin.commit.encode())
    series = target.patch_dir / "series"
    h.update(series.read_bytes() if series.exists() else b"")
    for patch in patches:
        h.update(patch.name.encode() + b"\0" + patch.text)
    for rel, path in overlay.items():
        h.update(rel.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def ensure_checkout(target: Target, mirror: Path) -> None:
    """Clone the mirror at the pinned commit where no checkout exists yet (atomically, via rename)."""
    if (target.checkout / ".git").exists():
        return
    if target.checkout.exists() and any(target.checkout.iterdir()):
        raise OverlayError(f"{target.checkout} exists but is not a git checkout; move it away first.")
    partial = target.checkout.with_name(f".{target.checkout.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "--quiet", "--no-checkout", str(mirror), str(partial))
    git("checkout", "--quiet", "--detach", target.pin.commit, cwd=partial)
    if target.checkout.exists():
        target.checkout.rmdir()
    partial.rename(target.checkout)


def exclude_nested(parent: Target, child: Target) -> None:
    """Keep a nested checkout (mmdetection3d inside StreamPETR) out of the parent's `git status`."""
    try:
        rel = child.checkout.relative_to(parent.checkout).as_posix()
    except ValueError:
        return
    exclude = _gitdir(parent.checkout) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    if f"/{rel}/" not in lines:
        exclude.write_text("\n".join([*lines, f"/{rel}/"]) + "\n")


def _index_env(checkout: Path) -> dict[str, str]:
    return {"GIT_INDEX_FILE": str(_gitdir(checkout) / STAMP_DIR / "series.index")}


def build_result(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> dict[str, bytes | None]:
    """Apply the series to a private index of the pinned tree; return path → content (None = deleted).

    Raises OverlayError naming the patch, file, hunk and reason as soon as one does not fit exactly.
    """
    checkout = target.checkout
    env = _index_env(checkout)
    (_gitdir(checkout) / STAMP_DIR).mkdir(exist_ok=True)
    git("read-tree", target.pin.commit, cwd=checkout, env=env)
    touched: set[str] = set()
    for number, patch in enumerate(patches, 1):
        problem = diagnose_patch(patch, lambda p: _index_blob(checkout, env, p))
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
    result: dict[str, bytes | None] = {p: _index_blob(checkout, env, p) for p in sorted(touched)}
    for rel, path in overlay.items():
        if rel in tracked or rel in result:
            owner = "tracked by upstream" if rel in tracked else "created by a patch"
            raise OverlayError(
                f"overlay/{rel} would shadow {rel}, which is {owner} at {target.pin.commit[:12]}.\n"
                "overlay/ may only add new paths; change an upstream file with a patch instead."
            )
        result[rel] = path.read_bytes()
    return result


def _index_blob(checkout: Path, env: dict[str, str], path: str) -> bytes | None:
    proc = git("cat-file", "blob", f":{path}", cwd=checkout, env=env, check=False, text=False)
    return proc.stdout if proc.returncode == 0 else None


def _upstream_history(target: Target, patch: Patch) -> str:
    """Upstream commits (in the cache mirror) that touched the patch's files after the pin."""
    from .cache import mirror_path

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


def _current(checkout: Path, rel: str) -> bytes | None:
    path = checkout / rel
    return path.read_bytes() if path.is_file() else None


def local_edits(target: Target, stamp: dict | None, result: dict[str, bytes | None]) -> list[str]:
    """Files whose content is not what the last apply left there (or, without a stamp, not pristine)."""
    checkout = target.checkout
    edits = []
    head = git_out("rev-parse", "HEAD", cwd=checkout)
    expected_head = stamp["commit"] if stamp else target.pin.commit
    if head != expected_head:
        edits.append(
            f"HEAD is {head[:12]}, expected {expected_head[:12]} (commits or checkouts made by hand)"
        )
    status = git("status", "--porcelain", "-z", "--untracked-files=no", cwd=checkout).stdout
    modified = {entry[3:] for entry in status.split("\0") if entry}
    owned = dict(stamp["files"]) if stamp else {}
    for rel in sorted(modified - owned.keys()):
        edits.append(rel)
    for rel, sha in sorted(owned.items()):
        data = _current(checkout, rel)
        if (None if data is None else blob_sha(data)) != sha:
            edits.append(rel)
    for rel, want in result.items():
        data = _current(checkout, rel)
        new_untracked = rel not in owned and rel not in modified and data is not None and data != want
        if new_untracked and git("ls-files", "--error-unmatch", rel, cwd=checkout, check=False).returncode:
            edits.append(f"{rel} (untracked file the overlay would overwrite)")
    return edits


def _write_tree(target: Target, stamp: dict | None, result: dict[str, bytes | None]) -> None:
    """Make every owned path hold its new content; restore the old contents if anything fails."""
    checkout = target.checkout
    owned = sorted(set(stamp["files"] if stamp else {}) | result.keys())
    pristine = {p: _pin_blob(target, p) for p in owned if p not in result}
    backup = {p: _current(checkout, p) for p in owned}
    try:
        for rel in owned:
            _put(checkout / rel, result[rel] if rel in result else pristine[rel])
    except OSError:
        for rel, data in backup.items():
            _put(checkout / rel, data)
        raise


def _pin_blob(target: Target, rel: str) -> bytes | None:
    proc = git("cat-file", "blob", f"{target.pin.commit}:{rel}", cwd=target.checkout, check=False, text=False)
    return proc.stdout if proc.returncode == 0 else None


def _put(path: Path, data: bytes | None) -> None:
    if data is None:
        if path.is_file() or path.is_symlink():
            path.unlink()
            _prune_empty_dirs(path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _prune_empty_dirs(directory: Path) -> None:
    while directory.is_dir() and not any(directory.iterdir()) and not (directory.parent / ".git").exists():
        directory.rmdir()
        directory = directory.parent


def apply_target(target: Target, force: bool = False) -> Outcome:
    """Bring one target to pin + series + overlay. See the module docstring for the guarantees."""
    patches = load_series(target.patch_dir)
    overlay = overlay_files(target.overlay_dir)
    mirror = require_cached(target.pin)
    ensure_checkout(target, mirror)
    stamp = _read_stamp(target.checkout)
    digest = _digest(target, patches, overlay)
    result = build_result(target, patches, overlay)
    edits = local_edits(target, stamp, result)
    if edits and not force:
        listing = "\n  ".join(edits)
        raise OverlayError(
            f"{target.checkout} has local edits that apply would discard:\n  {listing}\n"
            "Keep them with `nox -s refresh` (turns them into patches), or discard them with "
            "`nox -s apply -- --force`."
        )
    if not edits and stamp and stamp["digest"] == digest:
        return Outcome(target, up_to_date=True, patches=patches, overlay=list(overlay))
    checkout = target.checkout
    if force:
        git("checkout", "--quiet", "--force", "--detach", target.pin.commit, cwd=checkout)
    _write_tree(target, stamp, result)
    files = {rel: None if data is None else blob_sha(data) for rel, data in result.items()}
    new_stamp = {"commit": target.pin.commit, "digest": digest, "files": files}
    _stamp_path(checkout).write_text(json.dumps(new_stamp, indent=1, sort_keys=True) + "\n")
    return Outcome(target, up_to_date=False, patches=patches, overlay=list(overlay))


def apply_all(targets: list[Target], force: bool = False) -> list[Outcome]:
    """Apply every target in order (the outer checkout first)."""
    outcomes = []
    for i, target in enumerate(targets):
        outcomes.append(apply_target(target, force=force))
        for other in targets[i + 1 :]:
            exclude_nested(target, other)
    return outcomes
