"""`edit`: turn the applied series into commits on top of the pin (one per patch) to edit with git;
the rebase starts from the same commits (`series_commits`)."""

from __future__ import annotations

from pathlib import Path

from ..checkout.gitdir import checkout_lock
from ..errors import OverlayError
from ..gitcmd import TOOL_IDENTITY, git, git_out
from ..patchfile import Patch
from ..series import load_series
from ..targets import Target


def series_commits(checkout: Path, base: str, patches: list[Patch]) -> list[str]:
    """Commit each patch (`git am`, the tool's identity) on `base` in `checkout`; the new commits."""
    git("checkout", "--quiet", "--force", "--detach", base, cwd=checkout)
    for patch in patches:
        git("am", "--quiet", "--keep-cr", str(patch.path), cwd=checkout, env=TOOL_IDENTITY)
    return git_out("rev-list", "--reverse", f"{base}..HEAD", cwd=checkout).split()


def commit_series(target: Target) -> int:
    """Commit each patch of the series (`git am`, the tool's identity) on the pin; return how many."""
    with checkout_lock(target.checkout, "edit"):
        return _commit_series_locked(target)


def _commit_series_locked(target: Target) -> int:
    checkout = target.checkout
    if git_out("rev-parse", "HEAD", cwd=checkout) != target.pin.commit:
        raise OverlayError(f"{checkout} already has commits on top of the pin.")
    return len(series_commits(checkout, target.pin.commit, load_series(target.patch_dir)))
