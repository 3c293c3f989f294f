"""The env build's steps that run only from an empty cache and touch upstream's build scripts, on the
Python this runs under (`nox` runs this file on every supported Python the host has, the
distribution's own python3 included): the mmcv-full sdist fetched into an empty wheel cache without
running its setup.py, unpacked and edited as the builder does, then its setup.py run for its
version; the same for mmdet3d's source from the upstream mirror. No compile: the version is what
pip's metadata step asks of a setup.py first, and what PEP 667 (Python 3.13) broke.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from overlaytool import REPO_ROOT, cache_root, load_targets
from upstream_env.mmcv_wheel import SDIST, VERSION, prepare_source, sdist
from upstream_env.mmdet3d_wheel import prepare_source as prepare_mmdet3d_source
from upstream_env.paths import CONSTRAINTS, MMDET3D_PIN

pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module")
def cold_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty project cache but for the upstream mirrors (a newcomer's, seeded by `nox -s fetch`)."""
    root = tmp_path_factory.mktemp("cold-cache")
    (root / "mirrors").symlink_to(cache_root() / "mirrors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STREAMPETR_DALI_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def build_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The upstream env's pinned setuptools (with pkg_resources, which mmcv's setup.py imports), on
    its own path: the running env's setuptools may be newer."""
    pin = re.search(r"^setuptools==\S+", CONSTRAINTS.read_text(), re.M)
    assert pin, f"{CONSTRAINTS}: no setuptools pin"
    site = tmp_path_factory.mktemp("build-site")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), pin.group(0)]
    subprocess.run(pip, check=True)
    return site


def _version(src: Path, site: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "setup.py", "--version"], cwd=src, capture_output=True, text=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "MMCV_WITH_OPS": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, f"{src / 'setup.py'} --version failed:\n{proc.stderr[-2000:]}"
    return proc.stdout.strip().splitlines()[-1]


def test_the_mmcv_sdist_is_fetched_unpacked_and_its_setup_py_runs(
    cold_cache: Path, build_site: Path, tmp_path: Path
) -> None:
    archive = sdist(Path(sys.executable))
    assert archive == cold_cache / "wheels" / "sdist" / SDIST
    assert _version(prepare_source(archive, tmp_path, "c++17"), build_site) == VERSION


def test_the_mmdet3d_source_is_unpacked_and_its_setup_py_runs(
    cold_cache: Path, build_site: Path, tmp_path: Path
) -> None:
    (target,) = [t for t in load_targets(REPO_ROOT) if t.pin.file == MMDET3D_PIN]
    src = prepare_mmdet3d_source(target.pinned_repo(), target.pin.commit, tmp_path / "src")
    assert _version(src, build_site) == target.pin.tag.removeprefix("v")
