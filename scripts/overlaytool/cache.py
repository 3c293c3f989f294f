"""The local upstream cache: one bare mirror per pinned repository, per user.

Location: `$STREAMPETR_DALI_CACHE`, else `$XDG_CACHE_HOME/streampetr-dali`, else
`~/.cache/streampetr-dali`. Mirrors live in `<cache>/mirrors/<owner>+<repo>.git`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import OverlayError
from .gitcmd import git, has_commit
from .pins import Pin


def cache_root() -> Path:
    """The per-user cache directory of this project."""
    if override := os.environ.get("STREAMPETR_DALI_CACHE"):
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "streampetr-dali"


def mirror_path(pin: Pin) -> Path:
    """Where the bare mirror of `pin` lives in the cache."""
    return cache_root() / "mirrors" / f"{pin.slug}.git"


def is_cached(pin: Pin) -> bool:
    """True when the cache holds the pinned commit (no network)."""
    mirror = mirror_path(pin)
    return mirror.is_dir() and has_commit(mirror, pin.commit)


def _check_mirror(pin: Pin, mirror: Path) -> None:
    proc = git("rev-parse", "--git-dir", cwd=mirror, check=False)
    if proc.returncode != 0:
        raise OverlayError(
            f"The cached mirror of {pin.name} at {mirror} is corrupt ({proc.stderr.strip()}).\n"
            f"Remove it (rm -rf {mirror}) and run `nox -s fetch` again, or re-seed it with "
            "`nox -s fetch -- --from <path-or-url>`."
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


def fetch(pin: Pin, source: str | None = None) -> Path:
    """Make sure the cache holds `pin.commit`; return the mirror path.

    With `source` (a path or URL of any mirror or clone) the cache is seeded from it; without it the
    pinned URL is used, and only when the commit is not cached yet. Branch names are never trusted:
    success means the pinned commit object is present.
    """
    mirror = mirror_path(pin)
    if mirror.exists():
        _check_mirror(pin, mirror)
        if source is None and has_commit(mirror, pin.commit):
            return mirror
    origin = source or pin.url
    if source is not None and Path(source).expanduser().exists():
        origin = str(Path(source).expanduser().resolve())
    print(f"fetch: {pin.name} from {origin} into {mirror}", file=sys.stderr)
    if mirror.exists():
        args = ["fetch", "--progress", "--tags", origin, "+refs/heads/*:refs/heads/*"]
        proc = _run_progress(args, cwd=mirror)
    else:
        mirror.parent.mkdir(parents=True, exist_ok=True)
        partial = mirror.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        proc = _run_progress(["clone", "--mirror", "--progress", origin, str(partial)], cwd=None)
        if proc.returncode == 0:
            partial.rename(mirror)
        else:
            shutil.rmtree(partial, ignore_errors=True)
    if proc.returncode != 0:
        last_line = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise OverlayError(
            f"Could not fetch {pin.name} from {origin} (git: {last_line}).\n"
            f"The local cache ({mirror}) does not hold the pinned commit {pin.commit}. Either:\n"
            f"  1. connect to the network and run `nox -s fetch` (it clones {pin.url}), or\n"
            f"  2. seed the cache from a mirror or clone: `nox -s fetch -- --from <path-or-url>`."
        )
    if not has_commit(mirror, pin.commit):
        raise OverlayError(
            f"{origin} does not contain the pinned {pin.name} commit {pin.commit} ({pin.file}).\n"
            "Seed the cache from a clone that has it: `nox -s fetch -- --from <path-or-url>`."
        )
    return mirror


def require_cached(pin: Pin) -> Path:
    """The mirror of `pin`, fetching from the pinned URL when it is not cached yet."""
    return fetch(pin)
