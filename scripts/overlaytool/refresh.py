"""`refresh`: export the changes in an applied checkout back to the patch series, byte-stably.

Two ways to edit upstream:
- in the work tree (after `apply`): each changed file goes back into the one patch that touches
  it, keeping the patch's header; a file touched by several patches, or by none, needs commits;
- as commits on top of the pin: one commit per patch, exported with `git format-patch`
  (zero commit ids, no signature, no stat, full blob ids); a patch keeps its file name when its
  subject is unchanged.
Edits of overlay files are copied back to `overlay/`; overlay files never become patches.
"""

from __future__ import annotations

import re

from . import OverlayError
from .checkout import (
    checkout_lock,
    current,
    current_state,
    index_env,
    modified,
    overlay_blob,
    overlay_files,
    put,
    read_stamp,
    same_state,
)
from .gitcmd import TOOL_IDENTITY, git, git_out
from .series import Patch, load_series
from .targets import Target

FORMAT_PATCH = (
    "format-patch",
    "--zero-commit",
    "--no-signature",
    "--no-stat",
    "--no-numbered",
    "--full-index",
)
DIFF = (
    "diff",
    "--full-index",
    "--no-color",
    "--no-ext-diff",
    "--no-renames",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def slug(subject: str) -> str:
    """File name for a patch from its subject."""
    return re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")[:60] + ".patch"


def _write_series(target: Target, names: list[str], base: str | None = None) -> None:
    """Rewrite the series file with `names`, keeping its comments where they were: a comment
    block right above a patch (a group label) stays above it, the header (up to the last blank
    line before the first patch) stays on top, trailing comments stay last. `# base-commit:` is
    updated at the end of the header."""
    series = target.patch_dir / "series"
    lines = series.read_text().splitlines()
    if base is not None:
        lines = [line for line in lines if not line.startswith("# base-commit:")]
    blocks: dict[str, list[str]] = {}
    block: list[str] = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            block.append(line)
        else:
            blocks[line.strip()], block = block, []
    header, trailer = block, []
    if blocks:
        first = next(iter(blocks))
        split = max((i + 1 for i, line in enumerate(blocks[first]) if not line.strip()), default=0)
        header, blocks[first], trailer = blocks[first][:split], blocks[first][split:], block
    if base is not None:
        end = len(header)
        while end and not header[end - 1].strip():
            end -= 1  # the line goes above the header's closing blank lines
        header = [*header[:end], f"# base-commit: {base}", *header[end:]]
    out = list(header)
    for name in names:
        out += [*blocks.get(name, []), name]
    series.write_text("\n".join([*out, *trailer]) + "\n")


def _sync_overlay(target: Target) -> list[str]:
    """Copy edited overlay files from the checkout back into overlay/; return their paths."""
    changed = []
    for rel, source in overlay_files(target.overlay_dir).items():
        blob = current(target.checkout, rel)
        if blob is not None and blob != overlay_blob(source):
            put(source, blob)
            changed.append(rel)
    return changed


def export_commits(target: Target, patches: list[Patch], base: str | None = None) -> list[str]:
    """One patch per commit in pin..HEAD, written with format-patch; return the new series."""
    checkout = target.checkout
    by_subject = {p.subject: p.name for p in patches}
    commits = git_out("rev-list", "--reverse", f"{target.pin.commit}..HEAD", cwd=checkout).split()
    names = []
    for commit in commits:
        text = git(*FORMAT_PATCH, "--stdout", "-1", commit, cwd=checkout).stdout
        subject = git_out("log", "-1", "--format=%s", commit, cwd=checkout)
        name = by_subject.get(subject) or slug(subject)
        if name in names:
            raise OverlayError(f"Two commits export to {name}: give commit {commit[:12]} its own subject.")
        (target.patch_dir / name).write_text(text)
        names.append(name)
    for old in {p.name for p in patches} - set(names):
        (target.patch_dir / old).unlink()
    _write_series(target, names, base)
    return names


def export_work_tree(target: Target, patches: list[Patch], owned: dict[str, str | None]) -> list[str]:
    """Fold work-tree edits back into the patches that own the edited files; return rewritten names."""
    checkout = target.checkout
    overlay = set(overlay_files(target.overlay_dir))
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
        diff = git(*DIFF, before, after, cwd=checkout).stdout
        if not diff:
            raise OverlayError(
                f"{patch.name}: your edits revert the whole patch; remove it from the series instead."
            )
        patch.path.write_text(f"{patch.header}\n{diff}")
        rewritten.append(patch.name)
    unowned = sorted(p for p in edited_files if p not in owners)
    if unowned:
        raise OverlayError(
            "These changed files belong to no patch: "
            + ", ".join(unowned)
            + ".\nCommit them on top of the pin "
            "(git -C upstream/StreamPETR commit) with a subject and a DEP-3 Description/Forwarded body, "
            "then run refresh again to export the commits."
        )
    return rewritten


def refresh_target(target: Target) -> str:
    """Export one target's checkout back to its patch series; return a one-line summary."""
    if not (target.checkout / ".git").exists():
        raise OverlayError(f"{target.checkout} does not exist: run `nox -s apply` first.")
    with checkout_lock(target.checkout, "refresh"):
        return _refresh_locked(target)


def _refresh_locked(target: Target) -> str:
    patches = load_series(target.patch_dir)
    stamp = read_stamp(target.checkout)
    overlay = _sync_overlay(target)
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


def commit_series(target: Target) -> int:
    """Turn the applied series into commits on top of the pin (one per patch) to edit with git."""
    checkout = target.checkout
    with checkout_lock(checkout, "edit"):
        return _commit_series_locked(target)


def _commit_series_locked(target: Target) -> int:
    checkout = target.checkout
    if git_out("rev-parse", "HEAD", cwd=checkout) != target.pin.commit:
        raise OverlayError(f"{checkout} already has commits on top of the pin.")
    patches = load_series(target.patch_dir)
    git("checkout", "--quiet", "--force", "--detach", target.pin.commit, cwd=checkout)
    for patch in patches:
        git("am", "--quiet", "--keep-cr", str(patch.path), cwd=checkout, env=TOOL_IDENTITY)
    return len(patches)
