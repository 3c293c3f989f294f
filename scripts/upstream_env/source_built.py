"""What a wheelhouse carries of the per-user wheel cache (docs/offline.md): the wheels this project
builds from source (the mmcv-full wheel with its build facts, the mmdet3d wheel of the pin) and the
mmcv-full sdist they are compiled from; taken from the cache (made first where missing) for
``nox -s wheelhouse``, and put back into it from a wheelhouse's files where the env is built offline.
The facts that name them (a wheelhouse's ``locks/source-built.json``) are written and read here."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from .build import build, is_current, read_stamp
from .mmcv_wheel import ensure_mmcv_wheel, sdist
from .mmdet3d_wheel import ensure_mmdet3d_wheel
from .paths import ENV_DIR, LOG_FILE, env_python, store_wheel, wheel_cache
from .runlog import BuildLog


@dataclass(frozen=True)
class SourceBuilt:
    """The cached files: ``mmcv`` the folder of the mmcv-full wheel (None where the node compiles it
    from the sdist), ``mmdet3d`` the folder of the mmdet3d wheel, ``sdist`` the mmcv-full sdist."""

    mmcv: Path | None
    mmdet3d: Path
    sdist: Path

    @classmethod
    def of_env(cls) -> SourceBuilt:
        """The OpenMMLab env's: its very mmcv-full wheel (the ops choices its stamp records, reduced
        or full) and the mmdet3d wheel; the env is built first when it is not current."""
        if not is_current(ENV_DIR):
            build(ENV_DIR)
        python = env_python()
        stamp = read_stamp(ENV_DIR) or {}
        choices = (stamp.get("cuda_ops"), bool(stamp.get("full_ops")), stamp.get("arch_list"))
        log = BuildLog(LOG_FILE, total_steps=1)
        try:
            mmcv = ensure_mmcv_wheel(python, log, *choices)
            return cls(mmcv, ensure_mmdet3d_wheel(python, log), sdist(python, log))
        finally:
            log.close()

    @classmethod
    def for_node(cls, python: Path) -> SourceBuilt:
        """A stack kit's: no mmcv-full wheel (the node compiles it on its own torch), the sdist and
        the mmdet3d wheel, made with ``python`` where the cache lacks them."""
        log = BuildLog(LOG_FILE, total_steps=1)
        try:
            source = sdist(python, log)
            return cls(None, ensure_mmdet3d_wheel(python, log), source)
        finally:
            log.close()

    def files(self) -> list[Path]:
        """The files a wheelhouse carries: the wheels, then the sdist."""
        mmcv = list(self.mmcv.glob("mmcv_full-*.whl")) if self.mmcv else []
        return [*mmcv, *self.mmdet3d.glob("mmdet3d-*.whl"), self.sdist]

    def facts(self) -> dict:
        """Each file's name and the cache folder it goes back to, and the mmcv-full wheel's build
        facts (a wheelhouse's ``locks/source-built.json``; ``mmcv-full`` None without its wheel)."""
        mmcv = None
        if self.mmcv:
            (wheel,) = self.mmcv.glob("mmcv_full-*.whl")
            info_path = self.mmcv / "build-info.json"
            info = json.loads(info_path.read_text()) if info_path.exists() else {}
            mmcv = {"file": wheel.name, "cache_dir": self.mmcv.name, "build_info": info}
        (mmdet3d,) = self.mmdet3d.glob("mmdet3d-*.whl")
        mmdet3d_facts = {"file": mmdet3d.name, "cache_dir": self.mmdet3d.name}
        return {"mmcv-full": mmcv, "mmdet3d": mmdet3d_facts, "sdist": self.sdist.name}

    @staticmethod
    def seed(folder: Path, facts: dict) -> list[Path]:
        """Copy the files ``facts`` names from ``folder`` into the wheel cache where the env builder
        looks: the mmcv-full wheel (with its build facts), the mmdet3d wheel and the mmcv-full sdist;
        existing entries are kept. The entries it made."""
        seeded = []
        mmcv, mmdet3d = facts["mmcv-full"], facts["mmdet3d"]
        # a stack kit carries no mmcv-full wheel (the node compiles it), only the sdist
        built = [("mmcv-full", mmcv, mmcv["build_info"] or None)] if mmcv else []
        for kind, entry, meta in [*built, ("mmdet3d", mmdet3d, None)]:
            dest = wheel_cache() / kind / entry["cache_dir"]
            if not list(dest.glob("*.whl")):
                store_wheel(folder / entry["file"], dest, meta)
                seeded.append(dest)
        source = wheel_cache() / "sdist" / facts["sdist"]
        if not source.exists():
            source.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(folder / facts["sdist"], source)
            seeded.append(source)
        return seeded
