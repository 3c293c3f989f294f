"""The series as commits on top of the pin (`edit`, and the rebase's start: `series_commits`), and those
commits exported back byte-stably, one `git format-patch` file per commit, named by its
`Patch-Filename:` trailer (a new commit: after its subject) (docs/patches.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..atomic_write import replace_file
from ..checkout.gitdir import checkout_lock
from ..errors import OverlayError
from ..gitcmd import TOOL_IDENTITY, git, git_out
from ..patchfile import FILENAME_TRAILER, Patch, decode, filename_trailer
from ..series import load_series, write_series
from ..targets import Target

FORMAT_PATCH = (
    "format-patch",
    "--zero-commit",
    "--no-signature",
    "--no-stat",
    "--no-numbered",
    "--full-index",
)


def slug(subject: str) -> str:
    """File name for a new patch from its subject."""
    return re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")[:60] + ".patch"


def _message(checkout: Path, commit: str) -> bytes:
    return git("log", "-1", "--format=%B", commit, cwd=checkout, text=False).stdout


def _named(commit: str, name: str) -> str:
    """`name` when it is a patch file name of its own folder, else an error naming the commit."""
    if not name.endswith(".patch") or "/" in name or name.startswith("."):
        raise OverlayError(
            f"Commit {commit[:12]}: '{FILENAME_TRAILER}: {name}' is not a file name ending in .patch."
        )
    return name


def with_filename(checkout: Path, commit: str, name: str) -> str:
    """A copy of `commit` (same tree, parent, author, dates) whose message ends in the trailer."""
    message = git(
        "interpret-trailers", "--if-exists", "replace", "--trailer", f"{FILENAME_TRAILER}: {name}",
        cwd=checkout, input=_message(checkout, commit), text=False,
    ).stdout  # fmt: skip
    who = git_out("log", "-1", "--format=%an%n%ae%n%ad", "--date=raw", commit, cwd=checkout).split("\n")
    author = dict(zip(("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE"), who, strict=True))
    made = git(
        "commit-tree", f"{commit}^{{tree}}", "-p", f"{commit}^",
        cwd=checkout, input=message, env={**TOOL_IDENTITY, **author}, text=False,
    )  # fmt: skip
    return made.stdout.decode().strip()


def export_commits(target: Target, patches: list[Patch], base: str | None = None) -> list[str]:
    """One patch per commit in pin..HEAD, written with format-patch; return the new series."""
    checkout = target.checkout
    by_subject = {p.subject: p.name for p in patches if p.filename is None}  # patches from before trailers
    commits = git_out("rev-list", "--reverse", f"{target.pin.commit}..HEAD", cwd=checkout).split()
    names: list[str] = []
    for commit in commits:
        message = decode(_message(checkout, commit))
        trailer = filename_trailer(message)
        subject = message.split("\n", 1)[0].strip()
        name = _named(commit, trailer or by_subject.get(subject) or slug(subject))
        if name in names:
            raise OverlayError(
                f"Two commits export to {name}: give commit {commit[:12]} its own subject "
                f"(and its own '{FILENAME_TRAILER}:' trailer, or none)."
            )
        exported = commit if trailer == name else with_filename(checkout, commit, name)
        text = git(*FORMAT_PATCH, "--stdout", "-1", exported, cwd=checkout, text=False).stdout
        replace_file(target.patch_dir / name, text)
        names.append(name)
    for old in {p.name for p in patches} - set(names):
        (target.patch_dir / old).unlink()
    write_series(target.patch_dir, names, base)
    return names


def series_commits(checkout: Path, base: str, patches: list[Patch]) -> list[str]:
    """Commit each patch (`git am`, the tool's identity) on `base` in `checkout`; the new commits."""
    git("checkout", "--quiet", "--force", "--detach", base, cwd=checkout)
    for patch in patches:
        git("am", "--quiet", "--keep-cr", str(patch.path), cwd=checkout, env=TOOL_IDENTITY)
    return git_out("rev-list", "--reverse", f"{base}..HEAD", cwd=checkout).split()


def commit_series(target: Target) -> int:
    """`edit`: commit each patch of the series on the pin, to edit with git; return how many."""
    checkout = target.checkout
    with checkout_lock(checkout, "edit"):
        if git_out("rev-parse", "HEAD", cwd=checkout) != target.pin.commit:
            raise OverlayError(f"{checkout} already has commits on top of the pin.")
        return len(series_commits(checkout, target.pin.commit, load_series(target.patch_dir)))
