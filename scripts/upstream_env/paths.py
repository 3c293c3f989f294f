"""Where the upstream env, its build log and the wheel cache live."""

from __future__ import annotations

from pathlib import Path

from overlaytool.cache import cache_root

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements" / "upstream.txt"
CONSTRAINTS = ROOT / "constraints" / "upstream.txt"
MMDET3D_PIN = ROOT / "upstream" / "mmdetection3d.toml"
ENV_DIR = ROOT / ".nox" / "_env" / "upstream"
LOG_FILE = ROOT / ".nox" / "_env" / "upstream-build.log"


def wheel_cache() -> Path:
    """Per-user cache of wheels built from source."""
    return cache_root() / "wheels"


def env_python(env: Path) -> Path:
    return env / "bin" / "python"
