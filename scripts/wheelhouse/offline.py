"""Build the envs from a wheelhouse: ``STREAMPETR_WHEELHOUSE=DIR nox ...`` (the noxfile calls
:func:`activate`). The folder is verified against its ``SHA256SUMS``, the wheels this project
builds are put where the env builder's cache looks for them, and every pip call is pointed at
the folder with the index disabled (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .collect import SOURCE_BUILT
from .errors import WheelhouseError
from .requirement_locks import verify_sums

ENV_VAR = "STREAMPETR_WHEELHOUSE"


def seed_cache(folder: Path) -> list[Path]:
    """Copy the mmcv-full wheel (with its build facts), the mmdet3d wheel and the mmcv-full sdist
    into the per-user wheel cache where the env builder looks; existing entries are kept."""
    from upstream_env import store_wheel, wheel_cache

    facts_path = folder / "locks" / SOURCE_BUILT
    if not facts_path.is_file():
        return []  # a wheelhouse without the OpenMMLab env (--only hermetic,kit)
    facts = json.loads(facts_path.read_text())
    seeded = []
    mmcv, mmdet3d = facts["mmcv-full"], facts["mmdet3d"]
    # a stack kit carries no mmcv-full wheel (the node compiles it), only the sdist
    built = [("mmcv-full", mmcv, mmcv["build_info"] or None)] if mmcv else []
    for kind, entry, meta in [*built, ("mmdet3d", mmdet3d, None)]:
        dest = wheel_cache() / kind / entry["cache_dir"]
        if not list(dest.glob("*.whl")):
            store_wheel(folder / entry["file"], dest, meta)
            seeded.append(dest)
    sdist = wheel_cache() / "sdist" / facts["sdist"]
    if not sdist.exists():
        sdist.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / facts["sdist"], sdist)
        seeded.append(sdist)
    return seeded


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
