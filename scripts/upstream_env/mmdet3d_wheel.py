"""A wheel of mmdet3d built from the pinned commit (not on PyPI), cached per commit.

The source comes from the local upstream cache (the bare mirror `overlaytool` keeps), or else from
the applied checkout at the pin's `checkout` path; either way it is `git archive` of the pinned
commit, so the wheel never contains local edits and the checkout stays untouched.
"""

from __future__ import annotations

import io
import subprocess
import tempfile
import time
from pathlib import Path

from overlaytool import OverlayError, load_targets

from .errors import EnvBuildError
from .mmcv_wheel import unpack_source
from .paths import MMDET3D_PIN, ROOT, store_wheel, wheel_cache
from .runlog import BuildLog
from .setup_py import read_version_in_globals
from .timings import eta_line, record


def prepare_source(repo: Path, commit: str, dest: Path) -> Path:
    """`git archive` of `commit` unpacked into `dest`, its setup.py edited to read its version on every
    Python: the source tree, ready for `pip wheel`."""
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", commit], check=True, capture_output=True
    ).stdout
    unpack_source(io.BytesIO(archive), dest)
    read_version_in_globals(dest / "setup.py")
    return dest


def ensure_mmdet3d_wheel(python: Path, log: BuildLog) -> Path:
    """The folder holding the cached mmdet3d wheel of the pinned commit, built first if missing."""
    (target,) = [t for t in load_targets(ROOT) if t.pin.file == MMDET3D_PIN]  # its target
    pin = target.pin
    dest = wheel_cache() / "mmdet3d" / pin.commit[:12]
    if list(dest.glob("mmdet3d-*.whl")):
        log.say(f"      reusing cached wheel mmdet3d/{dest.name}")
        return dest
    try:
        repo = target.pinned_repo()  # the cache mirror, else the applied checkout
    except OverlayError as exc:
        raise EnvBuildError(str(exc)) from None
    log.say(f"      building mmdet3d {pin.tag or pin.commit[:12]}; {eta_line('mmdet3d')}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mmdet3d-build-") as tmp:
        src = prepare_source(repo, pin.commit, Path(tmp) / "src")
        out = Path(tmp) / "dist"
        log.run(
            [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", out, src],
            what="building the mmdet3d wheel",
        )
        (wheel,) = out.glob("mmdet3d-*.whl")
        store_wheel(wheel, dest)
    record("mmdet3d", time.monotonic() - started)
    return dest
