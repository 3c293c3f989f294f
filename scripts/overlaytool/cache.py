"""The local upstream cache: one bare mirror per pinned repository, per user.

Location: `$STREAMPETR_DALI_CACHE`, else `$XDG_CACHE_HOME/streampetr-dali`, else
`~/.cache/streampetr-dali`. Mirrors live in `<cache>/mirrors/<owner>+<repo>.git`, each with a lock
file beside it (`<owner>+<repo>.lock`): fetch holds it exclusively, a clone from the mirror
shares it. A mirror is (re)built by cloning into a fresh directory that is swapped in atomically,
so a damaged mirror is repaired by any fetch and a killed fetch never leaves half a mirror.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path

from . import OverlayError
from .faults import kill_point
from .gitcmd import git, has_commit
from .lock import hold
from .pins import Pin

KEEP_REFS = "refs/streampetr-dali/keep"  # keeps fetched pins and rebase targets from being pruned
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowAnySHA1InWant=true upload-pack"


def cache_root() -> Path:
    """The per-user cache directory of this project."""
    if override := os.environ.get("STREAMPETR_DALI_CACHE"):
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "streampetr-dali"


def mirror_path(pin: Pin) -> Path:
    """Where the bare mirror of `pin` lives in the cache."""
    return cache_root() / "mirrors" / f"{pin.slug}.git"


def mirror_lock(pin: Pin, command: str, shared: bool = False) -> AbstractContextManager[None]:
    """The lock of `pin`'s mirror: exclusive to change it, shared to read it."""
    return hold(cache_root() / "mirrors" / f"{pin.slug}.lock", command, f"mirror {pin.slug}", shared=shared)


def is_cached(pin: Pin) -> bool:
    """True when the cache holds the pinned commit (no network)."""
    mirror = mirror_path(pin)
    return mirror.is_dir() and has_commit(mirror, pin.commit)


def damage(mirror: Path) -> str | None:
    """What is wrong with the mirror's git directory or packs, or None when it looks sound.

    Cheap: every pack must end with the checksum its index records (a truncated or replaced pack
    does not), so this reads 60 bytes per pack, not the packs.
    """
    proc = git("rev-parse", "--git-dir", cwd=mirror, check=False)
    if proc.returncode != 0:
        return f"not a git repository: {proc.stderr.strip()}"
    for idx in sorted((mirror / "objects" / "pack").glob("*.idx")):
        pack = idx.with_suffix(".pack")
        if not pack.is_file():
            return f"{pack.name} is missing (its index {idx.name} is there)"
        with open(idx, "rb") as f:
            f.seek(-40, os.SEEK_END)
            recorded = f.read(20)
        with open(pack, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(size - 20, 0))
            trailer = f.read(20)
        if size < 32 or trailer != recorded:
            return f"{pack.name} is truncated or does not match its index ({size} bytes)"
    return None


def _repair_hint(pin: Pin) -> str:
    return (
        f"Repair it (it is fetched into a fresh mirror and swapped in): "
        f"`nox -s fetch -- --from <a good mirror or clone>` offline, or `nox -s fetch` online ({pin.url})."
    )


def _run_progress(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess:
    """Run git with its progress meter on the console; keep stderr for error reports."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.Popen(["git", *args], cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        sys.stderr.write(line)
    proc.wait()
    return subprocess.CompletedProcess(args, proc.returncode, "", "".join(lines))


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


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return (proc.stderr.strip().splitlines() or ["no output"])[-1]


def fetch(pin: Pin, source: str | None = None, want: Iterable[str] = ()) -> Path:
    """Make sure the cache holds `pin.commit` (and the full commit ids in `want`); return the mirror.

    With `source` (a path or URL of any mirror or clone) the cache is seeded from it; without it the
    pinned URL is used, and only when something is missing or the mirror is damaged. Branch names are
    never trusted: success means the commit objects are present.
    """
    mirror = mirror_path(pin)
    commits = [pin.commit, *want]
    local = local_source(source) if source else None
    origin = str(local) if local else (source or pin.url)
    if local:
        missing = [c for c in want if not has_commit(local, c)]
        if missing:
            raise OverlayError(f"{origin} does not contain commit {missing[0]} (source lacks it).")
    with mirror_lock(pin, "fetch"):
        _remove_leftovers(mirror)
        problem = damage(mirror) if mirror.exists() else None
        sound = mirror.exists() and problem is None
        if source is None and sound and all(has_commit(mirror, c) for c in commits):
            return mirror
        print(f"fetch: {pin.name} from {origin} into {mirror}", file=sys.stderr)
        if mirror.exists() and problem is None:
            proc = _fetch_into(mirror, origin, local is not None, want)
        else:
            proc = _fresh_mirror(pin, mirror, origin, local is not None, commits)
        if proc.returncode != 0:
            raise OverlayError(_fetch_failure(pin, mirror, origin, proc, want, problem))
        _require_commits(pin, mirror, origin, commits)
        for commit in commits:
            git("update-ref", f"{KEEP_REFS}/{commit}", commit, cwd=mirror)
    return mirror


def _fetch_into(mirror: Path, origin: str, local: bool, want: Iterable[str]) -> subprocess.CompletedProcess:
    """Fetch branches and tags (and the wanted commits by id) into an existing, sound mirror."""
    proc = _run_progress(["fetch", "--progress", "--tags", origin, "+refs/heads/*:refs/heads/*"], mirror)
    if proc.returncode == 0 and (missing := [c for c in want if not has_commit(mirror, c)]):
        proc = _fetch_by_id(mirror, origin, local, missing)
    return proc


def _fetch_by_id(mirror: Path, origin: str, local: bool, commits: list[str]) -> subprocess.CompletedProcess:
    """Fetch commits no branch points at (a local source serves any object it holds)."""
    upload = ["--upload-pack", LOCAL_UPLOAD_PACK] if local else []
    return _run_progress(
        ["-c", "protocol.version=2", "fetch", "--no-tags", *upload, origin, *commits], mirror
    )


def _require_commits(pin: Pin, repo: Path, origin: str, commits: list[str]) -> None:
    """Fail naming the first of `commits` (the pin or a wanted commit) that `repo` lacks."""
    for commit in commits:
        if not has_commit(repo, commit):
            pinned = commit == pin.commit
            what = f"the pinned {pin.name} commit {commit} ({pin.file})" if pinned else f"commit {commit}"
            raise OverlayError(
                f"{origin} does not contain {what}.\n"
                "Seed the cache from a clone that has it: `nox -s fetch -- --from <path-or-url>`."
            )


def _fresh_mirror(
    pin: Pin, mirror: Path, origin: str, local: bool, commits: list[str]
) -> subprocess.CompletedProcess:
    """Clone `origin` into a new mirror beside the old one; swap it in once it holds `commits`."""
    mirror.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f"{mirror.name}.partial-{os.getpid()}-", dir=mirror.parent))
    try:
        proc = _run_progress(["clone", "--mirror", "--progress", "--no-hardlinks", origin, str(fresh)], None)
        if proc.returncode == 0 and (missing := [c for c in commits[1:] if not has_commit(fresh, c)]):
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


def _fetch_failure(
    pin: Pin,
    mirror: Path,
    origin: str,
    proc: subprocess.CompletedProcess,
    want: Iterable[str],
    problem: str | None,
) -> str:
    """Say exactly what failed: the pinned commit, another commit (the pin being safe), or a repair."""
    git_line = _last_line(proc)
    if problem is not None and mirror.exists():
        return (
            f"Could not repair the damaged mirror of {pin.name} at {mirror} ({problem}) from {origin} "
            f"(git: {git_line}).\n{_repair_hint(pin)}"
        )
    if mirror.exists() and has_commit(mirror, pin.commit):
        targets = ", ".join(want) or "branches and tags"
        return (
            f"Could not fetch {targets} from {origin} (git: {git_line}).\n"
            f"The cache ({mirror}) still holds the pinned commit {pin.commit}; only this fetch failed."
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
                    f"The cached mirror of {pin.name} at {mirror} is damaged: {problem}.\n{_repair_hint(pin)}"
                )
            if has_commit(mirror, pin.commit):
                return mirror
    return fetch(pin)
