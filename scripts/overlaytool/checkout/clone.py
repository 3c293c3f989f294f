"""The checkouts `apply` makes: a clone of the cache mirror at the pin, made whole or not at all."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from ..atomic_write import replace_file
from ..cache import mirror_path
from ..errors import OverlayError
from ..faults import kill_point
from ..fetch import require_cached
from ..gitcmd import git, has_commit
from ..lock import hold
from ..targets import Target
from .gitdir import checkout_lock, gitdir, state_dir


def ensure_checkout(target: Target) -> None:
    """Clone the mirror at the pinned commit where no checkout exists yet: in a private folder under
    `clone_scratch`, renamed into place, under the scratch's lock (a killed run's partial clone is removed
    by the next)."""
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
            for entry in scratch.iterdir():  # partial clones a killed run left
                if entry.name != CLONE_LOCK:
                    shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
            remove_dead_scratch(checkout, "partial")
            partial = Path(tempfile.mkdtemp(prefix="partial-", dir=scratch))
            with target.mirror_read_lock("apply"):
                git("clone", "--quiet", "--no-checkout", str(mirror), str(partial))
            kill_point(f"{target.label}:clone")
            leave_outside(partial, target.outside)
            git("checkout", "--quiet", "--detach", target.pin.commit, cwd=partial)
            kill_point(f"{target.label}:clone-checkout")
            os.rename(partial, checkout)  # onto a missing or empty directory only
            kill_point(f"{target.label}:checkout")
        with contextlib.suppress(FileNotFoundError):  # a run we waited for removed it already
            shutil.rmtree(scratch)  # the lock file too: a run waiting on it finds the checkout made


CLONE_LOCK = "lock"


def remove_dead_scratch(checkout: Path, kind: str) -> None:
    """Remove the `kind` scratch folders of `checkout` whose run is gone (its pid no longer exists)."""
    prefix = f".{checkout.name}.{kind}-"
    for path in checkout.parent.glob(f"{prefix}*"):
        pid = path.name.removeprefix(prefix).split("-")[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


def clone_scratch(checkout: Path) -> Path:
    """Where partial clones of `checkout` are made: inside the enclosing checkout's git directory
    for a nested one (mmdetection3d in StreamPETR: never in a work tree `git status` sees), else
    the hidden `.<name>.clone/` beside it."""
    if (checkout.parent / ".git").exists():
        return state_dir(checkout.parent) / f"clone-{checkout.name}"
    return checkout.parent / f".{checkout.name}.clone"


def ensure_pin_commit(target: Target) -> None:
    """A checkout made for an older pin gets the pinned commit from the cache mirror."""
    if not has_commit(target.checkout, target.pin.commit):
        fetch_cache_refs(target, "apply")


def fetch_cache_refs(target: Target, holder: str) -> None:
    """Every ref of the cache mirror into the checkout (under refs/streampetr-dali/cache/)."""
    with target.mirror_read_lock(holder):
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
        replace_file(exclude, "\n".join([*lines, f"/{rel}/"]) + "\n")
    kill_point(f"{parent.label}:exclude")


SPARSE_HEAD = "# streampetr-dali: the folders of `outside` (patches/config.toml) stay out of this checkout"


def leave_outside(checkout: Path, outside: tuple[str, ...]) -> None:
    """Keep the `outside` folders of the upstream tree out of the work tree (git's sparse checkout,
    files already there left alone: `sparse.expectFilesOutsideOfPatterns`), so a fork's vendored
    copy never overwrites the nested checkout there. Call before checking out a commit that tracks them."""
    sparse = gitdir(checkout) / "info" / "sparse-checkout"
    ours = sparse.is_file() and sparse.read_text(encoding="utf-8").startswith(SPARSE_HEAD)
    if not outside:
        if ours:
            git("config", "--unset", "core.sparseCheckout", cwd=checkout, check=False)
            sparse.unlink()
        return
    text = "\n".join([SPARSE_HEAD, "/*", *(f"!/{folder}/" for folder in outside)]) + "\n"
    if ours and sparse.read_text(encoding="utf-8") == text:
        return
    if sparse.is_file() and not ours:
        raise OverlayError(f"{sparse} exists and is not the tool's: remove it, then run again.")
    git("config", "sparse.expectFilesOutsideOfPatterns", "true", cwd=checkout)
    git("config", "core.sparseCheckout", "true", cwd=checkout)
    sparse.parent.mkdir(parents=True, exist_ok=True)
    replace_file(sparse, text)
