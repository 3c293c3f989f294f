"""Build the envs from a wheelhouse: ``STREAMPETR_WHEELHOUSE=DIR nox ...`` (the noxfile calls
:func:`activate`; docs/offline.md)."""

from __future__ import annotations

import json
from pathlib import Path

from .collect import SOURCE_BUILT
from .requirement_locks import WheelhouseError, verify_sums

ENV_VAR = "STREAMPETR_WHEELHOUSE"


def seed_cache(folder: Path) -> list[Path]:
    """Copy the mmcv-full wheel (with its build facts), the mmdet3d wheel and the mmcv-full sdist
    into the per-user wheel cache where the env builder looks; existing entries are kept."""
    from upstream_env import SourceBuilt

    facts_path = folder / "locks" / SOURCE_BUILT
    if not facts_path.is_file():
        return []  # a wheelhouse without the OpenMMLab env (--only hermetic,kit)
    return SourceBuilt.seed(folder, json.loads(facts_path.read_text()))


def activate(folder: Path) -> dict[str, str]:
    """Verify ``folder``, seed the wheel cache; the pip environment variables to use it offline."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise WheelhouseError(f"{ENV_VAR}={folder}: no such folder")
    count = verify_sums(folder)
    seeded = seed_cache(folder)
    note = f", seeded the wheel cache with {len(seeded)} entries" if seeded else ""
    print(f"wheelhouse {folder}: {count} files verified{note}; the package index is disabled", flush=True)
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
