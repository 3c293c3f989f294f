"""Where the upstream env, its build log and the wheel cache live."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from overlaytool import cache_root

REQUIREMENTS = ROOT / "requirements" / "upstream.txt"
CONSTRAINTS = ROOT / "constraints" / "upstream.txt"
MMDET3D_PIN = ROOT / "upstream" / "mmdetection3d.toml"
ENV_DIR = ROOT / ".nox" / "_env" / "upstream"
LOG_FILE = ROOT / ".nox" / "_env" / "upstream-build.log"


def wheel_cache() -> Path:
    """Per-user cache of wheels built from source."""
    return cache_root() / "wheels"


def env_python(env: Path = ENV_DIR, *, root: Path | None = None) -> Path:
    """The python of `env` (the OpenMMLab env's unless told; with `root`, the env of the project's
    checkout there: a clone's)."""
    if root is not None:
        env = root / ENV_DIR.relative_to(ROOT)
    return env / "bin" / "python"


def store_wheel(wheel: Path, dest: Path, meta: dict | None = None) -> None:
    """Put a built wheel (and its build facts) into the cache folder `dest`, atomically."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    shutil.copy2(wheel, partial / wheel.name)
    if meta is not None:
        (partial / "build-info.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
