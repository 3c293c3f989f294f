"""An env is what its stamp says (hermetic: a real venv, real pip, tiny real wheels; no index).

pip keeps an installed `mmcv-full 1.6.0` whatever build it is, so a build that only ran
`pip install -r requirements/upstream.txt --find-links <wheel folder>` left the old build's ops in
place (CPU ops under a `"cuda": true` stamp). Here the builder's `_build` runs for real on a real
venv with its heavy parts (torch, the compile, mmdet3d's build) replaced by tiny wheels: every
switch of the ops choices must leave the installed `mmcv/_ext` equal to the chosen wheel's file, and
an auto-built env gets CUDA ops once the env's torch sees a GPU (and keeps them).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from tiny_wheels import EXT, Wheels
from upstream_env import EnvBuildError, mmcv_wheel
from upstream_env import build as builder
from upstream_env.build import STAMP, is_current, read_stamp

pytestmark = pytest.mark.slow  # about 40 CPU-s: ~45 pip runs in fresh venvs


def installed_ext(env: Path) -> bytes:
    (ext,) = env.glob(f"lib/python*/site-packages/{EXT}")
    return ext.read_bytes()


def test_every_switch_of_the_ops_choices_installs_the_chosen_wheel(tmp_path: Path, wheels: Wheels) -> None:
    """CPU -> CUDA, another arch list, reduced -> full, CUDA -> CPU, full -> reduced: each build
    leaves that build's `_ext` installed over the previous one of the same version, and its stamp
    names it (shown failing on the builder before this change: the second build kept cpu-reduced)."""
    env = tmp_path / "env"
    walk = [
        (dict(cuda=False), "cpu-reduced"),
        (dict(cuda=True), "cuda-reduced-arch8.0..9.0"),
        (dict(cuda=True, arch_list=("9.0",)), "cuda-reduced-arch9.0"),
        (dict(cuda=True, arch_list=("9.0",), full_ops=True), "cuda-full-arch9.0"),
        (dict(cuda=False, full_ops=True), "cpu-full"),
        (dict(cuda=False, full_ops=False), "cpu-reduced"),
    ]
    for flags, build in walk:
        builder.build(env, **flags)
        assert wheels.asked[-1] == build, f"{flags}: the builder asked for the wrong wheel"
        assert installed_ext(env) == wheels.ext[build], f"{flags}: the env kept another mmcv-full build"
        assert is_current(env, **flags)
    stamp = read_stamp(env)
    assert stamp is not None and stamp["cuda_ops"] is False and stamp["cuda_ops_why"] == "--no-cuda"
    assert stamp["mmcv_ext"].endswith(EXT) and len(stamp["mmcv_ext_sha256"]) == 64


def test_an_installed_ext_that_is_not_the_wheels_is_a_named_error_and_not_current(
    tmp_path: Path, wheels: Wheels
) -> None:
    env = tmp_path / "env"
    builder.build(env, cuda=True)
    ext = next(env.glob(f"lib/python*/site-packages/{EXT}"))
    ext.write_bytes(b"another build, installed by hand\n")  # e.g. pip install mmcv-full==1.6.0
    assert not is_current(env), "the stamp no longer says what the env holds"

    class NoPip:  # pip that does nothing: the check after it must notice
        path = tmp_path / "log"

        def run(self, cmd, **kwargs) -> None:  # noqa: ANN001
            pass

    site = ext.parent.parent
    with pytest.raises(EnvBuildError, match="holds another mmcv-full build than its choices") as exc:
        mmcv_wheel.install_wheel(env / "bin" / "python", site, tmp_path / "wheels" / "cpu-reduced", NoPip())
    assert str(ext) in str(exc.value) and "cpu-reduced" in str(exc.value)
    builder.build(env, cuda=True)  # not current: rebuilt, the wheel's file again
    assert installed_ext(env) == wheels.ext["cuda-reduced-arch8.0..9.0"]


def test_an_auto_env_built_without_a_gpu_is_rebuilt_with_cuda_ops_where_torch_sees_one(
    tmp_path: Path, wheels: Wheels
) -> None:
    """The login node builds by auto (no GPU: CPU ops, and the stamp says why); the compute node's
    torch sees a GPU (faked probe): the env is not current there, and the next build installs the
    CUDA ops (shown failing on the builder before this change: it was current, CPU ops stayed)."""
    env = tmp_path / "env"
    builder.build(env)
    assert installed_ext(env) == wheels.ext["cpu-reduced"] and is_current(env)
    login = read_stamp(env)
    wheels.gpu = True  # the same env, seen from a GPU node
    assert not is_current(env), "auto resolves to CUDA ops here"
    builder.build(env)
    assert installed_ext(env) == wheels.ext["cuda-reduced-arch8.0..9.0"] and is_current(env)
    node = json.loads((env / STAMP).read_text())
    assert login is not None and login["cuda"] is None and login["cuda_ops"] is False
    assert login["cuda_ops_why"] == "auto: torch 2.14.1+cu130 (CUDA 13.0 build) sees no GPU"
    assert node["cuda"] is None, "still auto: a later build follows the host again"
    assert node["cuda_ops"] is True and node["cuda_ops_why"].endswith("(CUDA 13.0 build) sees a GPU")
    wheels.gpu = False  # back on the login node: the CUDA ops serve it too, auto keeps them
    assert is_current(env), "auto never downgrades an env that has CUDA ops (test_build_cluster.py)"


def test_the_mmdet3d_wheel_is_made_while_mmcv_compiles_and_each_import_check_runs(
    tmp_path: Path, wheels: Wheels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compile leaves a core idle at times: the mmdet3d wheel and every requirement but mmcv-full
    are made beside it, the session's `beside` modules run from torch's install on (in the env's
    python; one that fails is logged and skipped), and the env is whole after (a compile that waits
    for the mmdet3d wheel and the module ends; on a builder that made them after the compile it
    waited in vain). The import checks run at once and leave the bytecode of what they import in the
    env, also where PYTHONDONTWRITEBYTECODE is set (uv compiles none); the second one failing fails the
    build by name and leaves no stamp."""
    from tiny_wheels import tiny_mmdet3d

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as container images set it

    made = threading.Event()
    modules, ran = tmp_path / "modules", tmp_path / "ran_beside"
    modules.mkdir()
    (modules / "beside_probe.py").write_text(f"import sys\nopen({str(ran)!r}, 'w').write(sys.executable)\n")
    monkeypatch.setenv("PYTHONPATH", str(modules))

    def mmdet3d(python: Path, log: object) -> Path:
        made.set()
        return tiny_mmdet3d(tmp_path / "m3d").parent

    def compile_beside(*args: object) -> Path:
        assert made.wait(30), "the mmdet3d wheel was not made while mmcv-full compiled"
        for _ in range(300):  # the module runs after the requirements' install
            if ran.exists():
                return wheels.ensure(*args)
            threading.Event().wait(0.1)
        raise AssertionError("the beside module did not run while mmcv-full compiled")

    monkeypatch.setattr(builder, "ensure_mmdet3d_wheel", mmdet3d)
    monkeypatch.setattr(builder, "ensure_mmcv_wheel", compile_beside)
    env = tmp_path / "env"
    builder.build(env, cuda=False, beside=("no_such_module", "beside_probe"))
    assert installed_ext(env) == wheels.ext["cpu-reduced"] and is_current(env, cuda=False)
    assert Path(ran.read_text()).parent == env / "bin", "the module ran in another python than the env's"
    for package in ("mmcv", "mmdet3d"):  # the two checks' imports (conftest.py)
        assert list(env.glob(f"lib/python*/site-packages/{package}/__pycache__/__init__.*.pyc")), package

    monkeypatch.setattr(builder, "IMPORT_CHECKS", ("import mmcv", "import mmdet3d, no_such_module"))
    with pytest.raises(EnvBuildError, match=r"import check failed (?s:.*)no_such_module"):
        builder.build(env, cuda=False, force=True)
    assert not (env / STAMP).exists() and not is_current(env, cuda=False)
