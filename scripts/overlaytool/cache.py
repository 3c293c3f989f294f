"""The local upstream cache: one bare mirror per pinned repository, per user (docs/offline.md), each
with its lock beside it; what is fetched from elsewhere than the pinned URL is kept under `KEEP_REFS`.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path

from .gitcmd import git, has_commit
from .lock import hold
from .pins import Pin

KEEP_REFS = "refs/streampetr-dali/keep"  # keeps fetched pins and rebase targets from being pruned


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
    """What is wrong with the mirror's git directory or packs, or None when it looks sound. Cheap: a
    pack must end with the checksum its index records (60 bytes read per pack)."""
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


def repair_hint(pin: Pin) -> str:
    return (
        f"Repair it (it is fetched into a fresh mirror and swapped in): "
        f"`nox -s fetch -- --from <a good mirror or clone>` offline, or `nox -s fetch` online ({pin.url})."
    )
