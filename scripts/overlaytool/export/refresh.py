"""`refresh`: export the changes in an applied checkout back to the patch series, byte-stably: work-tree
edits into the one patch owning each file, or commits on the pin (`edit`) exported one per patch;
edits of overlay files are copied back to `overlay/` (docs/patches.md).
"""

from __future__ import annotations

from ..atomic_write import replace_file
from ..checkout.gitdir import checkout_lock
from ..errors import OverlayError
from ..gitcmd import git, git_out
from ..overlay import overlay_blob
from ..patchfile import Patch, encode
from ..series import load_series
from ..targets import Target
from ..tree.files import current, current_state, modified, put, same_state
from ..tree.series_index import index_env
from ..tree.stamp import read_stamp
from .commit_export import export_commits

DIFF = (
    "diff",
    "--full-index",
    "--no-color",
    "--no-ext-diff",
    "--no-renames",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def _sync_overlay(target: Target, stamp: dict | None) -> list[str]:
    """Copy overlay files edited in the checkout (since the last apply wrote them) back into overlay/;
    return their paths. Where both sides changed, nothing is written and the files are named."""
    written = stamp["files"] if stamp else {}
    copy, both = [], []
    for rel, source in target.overlay_files().items():
        blob, ours = current(target.checkout, rel), overlay_blob(source)
        if blob is None or blob == ours:
            continue
        if rel in written and same_state(written[rel], blob.state):
            continue  # the checkout's copy is what apply wrote: the edit is in overlay/
        if rel in written and not same_state(written[rel], ours.state):
            both.append(rel)
            continue
        copy.append((rel, source, blob))
    if both:
        raise OverlayError(
            f"{target.label}: overlay file(s) edited both in overlay/ and in {target.checkout} since the "
            f"last apply: {', '.join(both)}. Nothing was written. Keep one side (copy it over the other), "
            "then refresh again."
        )
    for _, source, blob in copy:
        put(source, blob)
    return [rel for rel, _, _ in copy]


def export_work_tree(target: Target, patches: list[Patch], owned: dict[str, str | None]) -> list[str]:
    """Fold work-tree edits back into the patches that own the edited files; return rewritten names."""
    checkout = target.checkout
    overlay = set(target.overlay_files())
    changed = modified(checkout) | {p for p in owned if p not in overlay}
    # edited = differs from what the last apply wrote (the whole series' result), or not written by it
    edited_files = {
        rel for rel in changed if rel not in owned or not same_state(owned[rel], current_state(checkout, rel))
    }
    owners: dict[str, list[str]] = {}
    for patch in patches:
        for fp in patch.files:
            owners.setdefault(fp.path, []).append(patch.name)
    env = index_env(checkout)
    git("read-tree", target.pin.commit, cwd=checkout, env=env)
    rewritten = []
    for patch in patches:
        before = git_out("write-tree", cwd=checkout, env=env)
        git("apply", "--cached", str(patch.path), cwd=checkout, env=env)
        edited = [fp.path for fp in patch.files if fp.path in edited_files]
        if not edited:
            continue
        shared = [p for p in edited if len(owners[p]) > 1]
        if shared:
            raise OverlayError(
                f"{shared[0]} is touched by {', '.join(owners[shared[0]])}: a work-tree edit cannot be split "
                "between patches. Commit your change on top of the pin, one commit per patch, then refresh."
            )
        for rel in edited:
            blob = current(checkout, rel)  # content and mode (exec bit, symlink): both are exported
            if blob is None:
                git("rm", "--cached", "--quiet", rel, cwd=checkout, env=env)
            else:
                sha = git("hash-object", "-w", "--stdin", cwd=checkout, input=blob.data, text=False).stdout
                git("update-index", "--add", "--cacheinfo", f"{blob.mode},{sha.decode().strip()},{rel}",
                    cwd=checkout, env=env)  # fmt: skip
        after = git_out("write-tree", cwd=checkout, env=env)
        diff = git(*DIFF, before, after, cwd=checkout, text=False).stdout
        if not diff:
            raise OverlayError(
                f"{patch.name}: your edits revert the whole patch; remove it from the series instead."
            )
        replace_file(patch.path, encode(f"{patch.header}\n") + diff)
        rewritten.append(patch.name)
    unowned = sorted(p for p in edited_files if p not in owners)
    if unowned:
        raise OverlayError(
            "These changed files belong to no patch: "
            + ", ".join(unowned)
            + f".\nCommit them on top of the pin (git -C {checkout} commit) with a subject and a DEP-3 "
            "Description/Forwarded body, then run refresh again to export the commits."
        )
    return rewritten


def refresh_target(target: Target) -> str:
    """Export one target's checkout back to its patch series; return a one-line summary."""
    if not (target.checkout / ".git").exists():
        raise OverlayError(f"{target.checkout} does not exist: run `nox -s apply` first.")
    with checkout_lock(target.checkout, "refresh"):
        patches = load_series(target.patch_dir)
        stamp = read_stamp(target.checkout)
        overlay = _sync_overlay(target, stamp)
        head = git_out("rev-parse", "HEAD", cwd=target.checkout)
        if head != target.pin.commit:
            dirty = git("status", "--porcelain", "--untracked-files=no", cwd=target.checkout).stdout.strip()
            if dirty:
                raise OverlayError(
                    f"{target.checkout} has commits on top of the pin and uncommitted changes:\n{dirty}\n"
                    "Commit (or discard) them first, then refresh."
                )
            names = export_commits(target, patches)
            summary = f"{target.label}: exported {len(names)} commit(s) as patches"
        else:
            owned = stamp["files"] if stamp else {}
            names = export_work_tree(target, patches, owned)
            summary = f"{target.label}: {len(names)} patch(es) rewritten" + (
                f" ({', '.join(names)})" if names else ""
            )
        if overlay:
            summary += f"; overlay files updated: {', '.join(overlay)}"
        return summary
