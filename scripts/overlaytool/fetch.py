"""Fill the local upstream cache: the pinned commits (and rebase targets) into the bare mirrors; a
damaged or missing mirror is rebuilt aside and swapped in atomically (docs/offline.md).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterable
from pathlib import Path

from .cache import KEEP_REFS, damage, mirror_lock, mirror_path, repair_hint
from .errors import OverlayError
from .faults import kill_point
from .gitcmd import git, has_commit
from .pins import Pin

INCOMING_REFS = "refs/streampetr-dali/incoming"  # a named ref being fetched (`-<pid>`), until it is kept
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowAnySHA1InWant=true upload-pack"


def local_source(source: str) -> Path | None:
    """The repository directory `source` names, None for a URL; a missing path is an error."""
    if "://" in source or (":" in source and not source.startswith(("/", ".", "~"))):
        return None
    path = Path(source).expanduser()
    if not path.exists():
        raise OverlayError(f"--from {source}: no such path.")
    if git("rev-parse", "--git-dir", cwd=path, check=False).returncode != 0:
        raise OverlayError(f"--from {source}: {path} is not a git repository (a mirror or a clone).")
    return path.resolve()


def is_pinned_url(pin: Pin, origin: str) -> bool:
    """True when `origin` is the pin's URL (or, for a file:// URL, the directory it names)."""
    if origin == pin.url:
        return True
    parsed = urllib.parse.urlparse(pin.url)
    if parsed.scheme != "file" or "://" in origin:
        return False
    return Path(urllib.parse.unquote(parsed.path)).resolve() == Path(origin).expanduser().resolve()


def source_dir(origin: str) -> Path | None:
    """The repository directory a local path or file:// URL names (None: a remote, or not a repository)."""
    parsed = urllib.parse.urlparse(origin)
    if "://" in origin and parsed.scheme != "file":
        return None
    path = Path(urllib.parse.unquote(parsed.path) if "://" in origin else origin).expanduser()
    if not path.is_dir() or git("rev-parse", "--git-dir", cwd=path, check=False).returncode != 0:
        return None
    return path


def _run_progress(
    args: list[str], cwd: Path | None, config: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """Run git, with its progress meter only when stderr is a terminal; keep stderr for error reports."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    progress = ["--progress"] if sys.stderr.isatty() else []
    options = [flag for setting in config for flag in ("-c", setting)]
    cmd = ["git", *options, args[0], *progress, *args[1:]]
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace"
    )
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        sys.stderr.write(line)
    proc.wait()
    return subprocess.CompletedProcess(args, proc.returncode, "", "".join(lines))


def refuse_incomplete(origin: str) -> None:
    """A local source (path or file:// URL) whose commits lack their history — a shallow clone
    (`--depth`) or a partial one (`--filter`) — is refused before anything is fetched from it."""
    directory = source_dir(origin)
    if directory is None:
        return
    shallow = git("rev-parse", "--is-shallow-repository", cwd=directory, check=False).stdout.strip()
    if shallow == "true":
        raise OverlayError(
            f"--from {origin}: a shallow clone (made with --depth): its commits lack their history, which "
            "the cache keeps and the rebase needs (the commits between the pins, rename detection).\n"
            f"Next: deepen it (`git -C {directory} fetch --unshallow`), or pass `--from` a full clone "
            "or mirror."
        )
    promisor = git("config", "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$",
                   cwd=directory, check=False).stdout.strip()  # fmt: skip
    if promisor:
        raise OverlayError(
            f"--from {origin}: a partial clone (made with --filter): it lacks objects it would fetch on "
            f"demand.\nNext: fetch them (`git -C {directory} fetch --refetch --no-filter`), or pass `--from` "
            "a full clone or mirror."
        )


def _drop_partial_fetch(mirror: Path, commits: list[str]) -> None:
    """After a failed fetch: no temporary pack stays; after a fetch that made the mirror shallow
    (a remote that serves no history), the commits it brought lose their refs and the mirror its
    `shallow` file (call with the mirror lock held)."""
    for tmp in (mirror / "objects" / "pack").glob("tmp_*"):
        tmp.unlink(missing_ok=True)
    if (mirror / "shallow").exists():
        for commit in commits:
            git("update-ref", "-d", f"{KEEP_REFS}/{commit}", cwd=mirror, check=False)
        (mirror / "shallow").unlink()


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return (proc.stderr.strip().splitlines() or ["no output"])[-1]


# what git says when the source repository lacks objects its commits need (a damaged clone)
MISSING_OBJECTS = re.compile(
    r"unable to read [0-9a-f]{7,}|missing (blob|tree|commit) |bad object |did not send all necessary objects|"
    r"repository corruption|pack-objects died",
    re.I,
)


def missing_objects_step(proc: subprocess.CompletedProcess, origin: str) -> str | None:
    """The next step when the fetch failed because `origin` lacks objects (None: another failure)."""
    found = MISSING_OBJECTS.search(proc.stderr)
    if found is None:
        return None
    line = next((ln.strip() for ln in proc.stderr.splitlines() if found.group(0) in ln), found.group(0))
    directory = source_dir(origin)
    check = (
        f"check it with `git -C {directory} fsck --connectivity-only` (it names what is missing), then "
        "repair it (fetch the missing objects into it from where it was cloned, or clone it afresh)"
        if directory is not None
        else "the server's repository is damaged"
    )
    return (
        f"{origin} lacks objects its commits need (git: {line}): {check}; or pass `--from` another "
        "clone or mirror that has the commit."
    )


def fetch(pin: Pin, source: str | None = None, want: Iterable[str] = ()) -> Path:
    """Make sure the cache holds `pin.commit` (and the full commit ids in `want`); return the mirror.
    With `source` the cache is seeded from it, else from the pinned URL when something is missing."""
    mirror = mirror_path(pin)
    commits = [pin.commit, *want]
    local = local_source(source) if source else None
    origin = str(local) if local else (source or pin.source or pin.url)
    refuse_incomplete(origin)
    with mirror_lock(pin, "fetch"):
        _remove_leftovers(mirror)
        problem = damage(mirror) if mirror.exists() else None
        sound = mirror.exists() and problem is None
        if source is None and sound and all(has_commit(mirror, c) for c in commits):
            return mirror
        if (directory := source_dir(origin)) is not None:  # say what it lacks before fetching
            _require_commits(
                pin, directory, origin, [c for c in commits if not (sound and has_commit(mirror, c))]
            )
        print(f"fetch: {pin.name} from {origin} into {mirror}", file=sys.stderr)
        branches = is_pinned_url(pin, origin)  # only the pinned URL's branches and tags enter refs/heads
        if mirror.exists() and problem is None:
            proc = _fetch_into(mirror, origin, local is not None, commits, branches)
        else:
            proc = _fresh_mirror(pin, mirror, origin, local is not None, commits, branches)
        if proc.returncode != 0:
            _drop_partial_fetch(mirror, [])
            raise OverlayError(_fetch_failure(pin, mirror, origin, proc, want, problem))
        if (mirror / "shallow").exists():
            _drop_partial_fetch(mirror, [c for c in want if c != pin.commit])
            raise OverlayError(
                f"{origin} served commits without their history (a shallow repository); the cache does not "
                "keep them.\nNext: pass `--from` a full clone or mirror that has the commit."
            )
        _require_commits(pin, mirror, origin, commits)
        for commit in commits:
            git("update-ref", f"{KEEP_REFS}/{commit}", commit, cwd=mirror)
    return mirror


def _fetch_into(
    mirror: Path, origin: str, local: bool, commits: list[str], branches: bool
) -> subprocess.CompletedProcess:
    """Into an existing, sound mirror: the pinned URL's branches and tags (`branches`), then the
    `commits` still missing, by id (from any other source: by id only)."""
    proc = subprocess.CompletedProcess([], 0, "", "")
    if branches:
        proc = _run_progress(["fetch", "--tags", origin, "+refs/heads/*:refs/heads/*"], mirror)
    if proc.returncode == 0 and (missing := [c for c in commits if not has_commit(mirror, c)]):
        proc = _fetch_by_id(mirror, origin, local, missing)
    return proc


def _fetch_by_id(mirror: Path, origin: str, local: bool, commits: list[str]) -> subprocess.CompletedProcess:
    """Fetch commits no branch points at (a local source serves any object it holds)."""
    upload = ["--upload-pack", LOCAL_UPLOAD_PACK] if local else []
    return _run_progress(["fetch", "--no-tags", *upload, origin, *commits], mirror, ("protocol.version=2",))


def fetch_ref(pin: Pin, ref: str, source: str | None) -> str:
    """The commit `ref` (a branch or tag) names at `source`, else at the pinned URL, kept under the keep
    refs; offline, a name without `source` falls back to the mirror's copy of the pinned URL's ref."""
    origin_arg = source or pin.url  # a bare name is the pinned URL's, even when a fork serves the pin
    local = local_source(origin_arg) if source else None
    origin = str(local) if local else origin_arg
    mirror = fetch(pin, source) if source else require_cached(pin)  # refuses a shallow source first
    incoming = f"{INCOMING_REFS}-{os.getpid()}"
    with mirror_lock(pin, "fetch"):
        stale = git("for-each-ref", "--format=%(refname)", f"{INCOMING_REFS}-*", cwd=mirror).stdout.split()
        for leftover in stale:  # of fetches that were killed (the exclusive lock rules out live ones)
            git("update-ref", "-d", leftover, cwd=mirror, check=False)
        try:
            proc = _run_progress(["fetch", "--no-tags", origin, f"+{ref}:{incoming}"], mirror)
            if proc.returncode == 0 and (mirror / "shallow").exists():
                _drop_partial_fetch(mirror, [])
                raise OverlayError(
                    f"{origin} served {ref!r} without its history (a shallow repository); the cache does "
                    "not keep it.\nNext: pass `--from` a full clone or mirror that has it."
                )
            if proc.returncode == 0:
                commit = git("rev-parse", "--verify", f"{incoming}^{{commit}}", cwd=mirror).stdout.strip()
                git("update-ref", f"{KEEP_REFS}/{commit}", commit, cwd=mirror)
                return commit
        finally:
            git("update-ref", "-d", incoming, cwd=mirror, check=False)
        _drop_partial_fetch(mirror, [])
        cached = git(
            "rev-parse", "--verify", "--quiet", f"refs/heads/{ref}^{{commit}}", cwd=mirror, check=False
        )
        if source is None and cached.returncode == 0:
            print(
                f"fetch: {origin} is not reachable ({_last_line(proc)}); using the cache's copy of its "
                f"{ref!r}, fetched earlier",
                file=sys.stderr,
            )
            return cached.stdout.strip()
    damaged = missing_objects_step(proc, origin)
    if damaged is not None:
        raise OverlayError(f"Could not fetch {ref!r} from {origin}.\nNext: {damaged}")
    raise OverlayError(
        f"Could not fetch {ref!r} from {origin} (git: {_last_line(proc)}).\n"
        "Next: name a branch or tag that exists there (`git ls-remote <source>` lists them), give the "
        "full commit id, or pass `--from <path-or-url>` of a repository that has it."
    )


def drop_keep_ref(pin: Pin, commit: str) -> None:
    """Forget a rebase target the user abandoned (its objects go with the next `git gc`)."""
    mirror = mirror_path(pin)
    if mirror.is_dir():
        with mirror_lock(pin, "rebase"):
            git("update-ref", "-d", f"{KEEP_REFS}/{commit}", cwd=mirror, check=False)


def _require_commits(pin: Pin, repo: Path, origin: str, commits: list[str]) -> None:
    """Fail naming the first of `commits` (the pin or a wanted commit) that `repo` lacks."""
    for commit in commits:
        if not has_commit(repo, commit):
            pinned = commit == pin.commit
            what = f"the pinned {pin.name} commit {commit} ({pin.file})" if pinned else f"commit {commit}"
            raise OverlayError(
                f"{origin} does not contain {what} (the source lacks it).\n"
                "Next: pass `--from` a clone or URL that has it "
                "(`git -C <clone> cat-file -t <commit>` prints `commit`)."
            )


def _fresh_mirror(
    pin: Pin, mirror: Path, origin: str, local: bool, commits: list[str], branches: bool
) -> subprocess.CompletedProcess:
    """A new mirror beside the old one (a mirror clone of the pinned URL, else an empty repository
    that gets `commits` by id); swapped in once it holds `commits`."""
    mirror.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f"{mirror.name}.partial-{os.getpid()}-", dir=mirror.parent))
    try:
        if branches:
            proc = _run_progress(["clone", "--mirror", "--no-hardlinks", origin, str(fresh)], None)
        else:
            proc = git("init", "--quiet", "--bare", str(fresh), check=False)
        if proc.returncode == 0 and (missing := [c for c in commits if not has_commit(fresh, c)]):
            proc = _fetch_by_id(fresh, origin, local, missing)
        if proc.returncode == 0 and (problem := damage(fresh)):
            return subprocess.CompletedProcess([], 1, "", f"the fetched copy is damaged too: {problem}")
        if proc.returncode == 0:
            _require_commits(pin, fresh, origin, commits)
            kill_point(f"mirror {mirror.stem}:fresh")
            _swap_in(fresh, mirror)
            kill_point(f"mirror {mirror.stem}:swap")
        return proc
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def _swap_in(fresh: Path, mirror: Path) -> None:
    """Put `fresh` at `mirror` atomically (renameat2 RENAME_EXCHANGE; `fresh` then holds the old one)."""
    if not mirror.exists():
        os.rename(fresh, mirror)
        return
    at_fdcwd, rename_exchange = -100, 2
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if (
        renameat2
        and renameat2(at_fdcwd, os.fsencode(fresh), at_fdcwd, os.fsencode(mirror), rename_exchange) == 0
    ):
        return
    old = mirror.with_name(f"{mirror.name}.old-{os.getpid()}")  # no exchange here: two renames
    os.rename(mirror, old)
    os.rename(fresh, mirror)
    shutil.rmtree(old, ignore_errors=True)


def _remove_leftovers(mirror: Path) -> None:
    """Half-made mirrors of killed fetches (called with the mirror lock held)."""
    for pattern in (f"{mirror.name}.partial-*", f"{mirror.name}.old-*"):
        for leftover in mirror.parent.glob(pattern):
            shutil.rmtree(leftover, ignore_errors=True)
    if mirror.is_dir():
        _drop_partial_fetch(mirror, [])


def _fetch_failure(
    pin: Pin,
    mirror: Path,
    origin: str,
    proc: subprocess.CompletedProcess,
    want: Iterable[str],
    problem: str | None,
) -> str:
    """Say exactly what failed: the pinned commit, another commit (the pin being safe), or a repair;
    a source lacking objects gets the check that finds them."""
    git_line = _last_line(proc)
    damaged = missing_objects_step(proc, origin)
    if damaged is not None:
        kept = mirror.exists() and has_commit(mirror, pin.commit)
        safe = f"The cache ({mirror}) still holds the pinned commit {pin.commit}. " if kept else ""
        return f"Could not fetch {', '.join(want) or pin.name} from {origin}.\n{safe}Next: {damaged}"
    if problem is not None and mirror.exists():
        return (
            f"Could not repair the damaged mirror of {pin.name} at {mirror} ({problem}) from {origin} "
            f"(git: {git_line}).\n{repair_hint(pin)}"
        )
    if mirror.exists() and has_commit(mirror, pin.commit):
        targets = ", ".join(want) or "branches and tags"
        return (
            f"Could not fetch {targets} from {origin} (git: {git_line}).\n"
            f"The cache ({mirror}) still holds the pinned commit {pin.commit}; only this fetch failed.\n"
            "Next: check that the source is reachable and has it (`git ls-remote <source>`), or pass "
            "`--from <path-or-url>` of a clone that has it."
        )
    return (
        f"Could not fetch {pin.name} from {origin} (git: {git_line}).\n"
        f"The local cache ({mirror}) does not hold the pinned commit {pin.commit}. Either:\n"
        f"  1. connect to the network and run `nox -s fetch` (it clones {pin.url}), or\n"
        f"  2. seed the cache from a mirror or clone: `nox -s fetch -- --from <path-or-url>`."
    )


def require_cached(pin: Pin) -> Path:
    """The sound mirror holding `pin`, fetched from the pinned URL when it is not cached yet."""
    mirror = mirror_path(pin)
    if mirror.exists():
        with mirror_lock(pin, "apply", shared=True):
            problem = damage(mirror)
            if problem:
                raise OverlayError(
                    f"The cached mirror of {pin.name} at {mirror} is damaged: {problem}.\n{repair_hint(pin)}"
                )
            if has_commit(mirror, pin.commit):
                return mirror
    return fetch(pin)
