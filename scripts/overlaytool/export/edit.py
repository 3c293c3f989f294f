"""`edit`: turn the applied series into commits on top of the pin (one per patch) to edit with git."""

from __future__ import annotations

from .. import OverlayError
from ..gitcmd import git_out
from ..rebase.loop import series_commits
from ..series import load_series
from ..targets import Target
from ..tree.checkout import checkout_lock


def commit_series(target: Target) -> int:
    """Commit each patch of the series (`git am`, the tool's identity) on the pin; return how many."""
    with checkout_lock(target.checkout, "edit"):
        return _commit_series_locked(target)


def _commit_series_locked(target: Target) -> int:
    checkout = target.checkout
    if git_out("rev-parse", "HEAD", cwd=checkout) != target.pin.commit:
        raise OverlayError(f"{checkout} already has commits on top of the pin.")
    return len(series_commits(checkout, target.pin.commit, load_series(target.patch_dir)))
