"""The commit a rebase moves to: a full id or a branch/tag name, fetched into the cache's keep refs,
and what the new pin records as its `source`."""

from __future__ import annotations

import re

from ..cache import KEEP_REFS, mirror_path
from ..fetch import fetch, fetch_ref, local_source, require_cached
from ..gitcmd import git, has_commit
from ..pins import URL_RE
from ..targets import Target

FULL_ID = re.compile(r"^[0-9a-f]{40}$")


def resolve(target: Target, ref: str, source: str | None) -> tuple[str, bool]:
    """The full commit id `ref` names (a full id, fetched by id; a name, the branch or tag of `source`,
    else of the pinned URL), kept in the cache; and whether this call made its keep ref."""
    pin = target.pin
    if not FULL_ID.match(ref):
        before = _keep_refs(target)
        commit = fetch_ref(pin, ref, source)
        return commit, commit not in before
    kept = ref in _keep_refs(target)
    if source or not has_commit(require_cached(pin), ref):
        fetch(pin, source, [ref])  # keeps it
        return ref, not kept
    return ref, False  # in the cache already (a branch of the pinned URL holds it): nothing to write


def _keep_refs(target: Target) -> set[str]:
    """The commits the cache mirror keeps (pins and rebase targets fetched so far)."""
    mirror = mirror_path(target.pin)
    if not mirror.is_dir():
        return set()
    out = git("for-each-ref", "--format=%(refname)", f"{KEEP_REFS}/", cwd=mirror, check=False).stdout
    return {line.rsplit("/", 1)[-1] for line in out.splitlines()}


def source_url(target: Target, ref: str, source: str | None) -> tuple[str | None, list[str]]:
    """What the new pin records as `source` (a URL other than `url`), and warnings to print.

    Without `--from` a name is the pinned URL's branch (no source), a commit id keeps the pin's."""
    if source is None:
        return (target.pin.source if FULL_ID.match(ref) else None), []
    path = local_source(source)
    if path is None:
        return (None if source == target.pin.url else source), []
    remote = git("remote", "get-url", "origin", cwd=path, check=False).stdout.strip()
    reachable = URL_RE.match(remote) and not remote.startswith("file:")  # a URL another machine can use
    hint = f' (its origin is {remote}: `source = "{remote}"` if the commit is there)' if reachable else ""
    return None, [
        f"warning: the new commit came from the local path {path}; the pin's url {target.pin.url} may not "
        f"serve it, so a fresh clone elsewhere may be unable to fetch its own pin.\n"
        "  Point the pin at a reachable source: rebase again with `--from <URL that has the commit>`, or "
        "add "
        f'`source = "<URL>"` below `commit` in {target.pin.file.name}{hint}.'
    ]
