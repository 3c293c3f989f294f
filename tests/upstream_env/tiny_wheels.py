"""Shared by the env builder's install tests: tiny real wheels (a zip with its dist-info and RECORD,
as `pip wheel` writes one) of `mmcv-full 1.6.0` in several builds, told apart by the bytes of their
`mmcv/_ext` library, and of mmdet3d; pip installs them into a real venv like the real ones. `Wheels`
serves them to the builder in place of the compile, with a faked GPU (the `wheels` fixture)."""

from __future__ import annotations

import io
import sysconfig
import tarfile
from pathlib import Path

from upstream_env import mmcv_wheel
from wheel_files import make_wheel

EXT = f"mmcv/_ext{sysconfig.get_config_var('EXT_SUFFIX')}"  # where the real wheel has its library
GPU_INFO = {"tag": "cp311", "torch": "2.14.1+cu130", "torch_cuda": "13.0", "torch_site": "/nowhere"}
BUILDS = {  # (cuda ops, full set, arch list) -> the name its tiny wheel's `_ext` bytes carry
    (False, False, None): "cpu-reduced",
    (False, True, None): "cpu-full",
    (True, False, ("8.0", "8.6", "8.9", "9.0")): "cuda-reduced-arch8.0..9.0",
    (True, False, ("9.0",)): "cuda-reduced-arch9.0",
    (True, True, ("9.0",)): "cuda-full-arch9.0",
}


def tiny_mmcv(folder: Path, build: str) -> bytes:
    """A tiny mmcv-full 1.6.0 wheel in `folder` whose `_ext` library's bytes name `build`; those bytes."""
    ext = f"compiled ops of the {build} build\n".encode()
    make_wheel(folder, "mmcv-full", "1.6.0", {"mmcv/__init__.py": b"__version__ = '1.6.0'\n", EXT: ext})
    return ext


def tiny_mmdet3d(folder: Path) -> Path:
    return make_wheel(folder, "mmdet3d", "1.0.0rc6", {"mmdet3d/__init__.py": b"__version__ = '1.0.0rc6'\n"})


# mmcv-full 1.6.0's get_version(), which the build edits for Python 3.13 (upstream_env/setup_py.py)
GET_VERSION = b"""
def get_version():
    with open(version_file, encoding='utf-8') as f:
        exec(compile(f.read(), version_file, 'exec'))
    return locals()['__version__']
"""


def tiny_mmcv_sdist(sdist: Path, version: str) -> Path:
    """`sdist`: an mmcv-full `version` sdist whose setup.py holds only what the build edits (its C++
    standard and get_version)."""
    data = b"extra_compile_args = {'cxx': ['-std=c++14']}\n" + GET_VERSION
    with tarfile.open(sdist, "w:gz") as tar:
        member = tarfile.TarInfo(f"mmcv-full-{version}/setup.py")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    return sdist


class Wheels:
    """The cached-wheel folders the faked `ensure_mmcv_wheel` serves, one per build; the GPU the
    faked probe reports (`gpu`); the flavours asked for."""

    def __init__(self, root: Path) -> None:
        self.gpu = False
        self.asked: list[str] = []
        self.ext = {build: tiny_mmcv(root / build, build) for build in BUILDS.values()}
        self.root = root

    def info(self, python: Path) -> dict:
        return {**GPU_INFO, "cuda_available": self.gpu}

    def ensure(self, python, log, cuda=None, full_ops=False, arches=None, toolkit="auto"):  # noqa: ANN001, ANN201
        cuda_ops = mmcv_wheel.want_cuda_ops(self.info(python), cuda)  # as the real one resolves
        build = BUILDS[(cuda_ops, bool(full_ops), tuple(arches) if cuda_ops else None)]
        self.asked.append(build)
        return self.root / build
