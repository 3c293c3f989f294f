"""The env builder itself (hermetic, stdlib only): error extraction, wheel keys, the stamp.

These need neither the upstream env nor the pins; the stack tier tests run the real code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_env import EnvBuildError
from upstream_env.build import Choices, digest
from upstream_env.mmcv_wheel import _patch_std, cxx_std, flavour, want_cuda_ops
from upstream_env.runlog import BuildLog, first_error

INFO = {
    "tag": "cp311",
    "torch": "2.14.1+cu130",
    "torch_cuda": "13.0",
    "cuda_available": False,
    "torch_site": "/nowhere",
}


def test_first_error_prefers_the_compiler_diagnostic_over_pips_summary() -> None:
    lines = [
        "WARNING: Location 'file:///x' is ignored\n",
        "  [3/67] c++ -c roi_align.cpp\n",
        "  roi_align.cpp:12:5: error: 'foo' was not declared in this scope\n",
        "     12 |     foo();\n",
        "  ninja: build stopped: subcommand failed.\n",
        "ERROR: Failed building wheel for mmcv-full\n",
    ]
    text = first_error(lines, context=1)
    assert "roi_align.cpp:12:5: error: 'foo'" in text and "Failed building wheel" not in text


def test_first_error_finds_pips_error_and_falls_back_to_the_tail() -> None:
    assert "ResolutionImpossible" in first_error(["Collecting x\n", "ERROR: ResolutionImpossible: ...\n"])
    assert first_error(["a\n", "b\n", "last words\n"]).endswith("last words")


def test_failed_step_names_the_first_error_and_the_log(tmp_path: Path) -> None:
    log = BuildLog(tmp_path / "build.log", total_steps=1)
    cmd = ["python3", "-c", "import sys; print('x.cpp:1:2: error: boom'); sys.exit(3)"]
    with pytest.raises(EnvBuildError) as exc:
        log.run(cmd, what="compiling")
    log.close()
    message = str(exc.value)
    assert "compiling failed (exit 3)" in message and "x.cpp:1:2: error: boom" in message
    assert str(tmp_path / "build.log") in message
    assert "x.cpp:1:2: error: boom" in (tmp_path / "build.log").read_text()


def test_cxx_standard_follows_torch_headers() -> None:
    assert cxx_std("2.14.1+cu130") == "c++20"
    assert cxx_std("2.13.0+cpu") == "c++17"
    assert cxx_std("3.0.0") == "c++20"


def test_wheel_cache_key_separates_torch_and_ops_flavour() -> None:
    cpu = flavour(INFO, cuda_ops=False)
    assert cpu == "cp311-torch2.14.1+cu130-cpuops-c++20-r2"
    assert flavour(INFO, cuda_ops=True) == "cp311-torch2.14.1+cu130-cu13.0ops-arch8.0_8.6_8.9_9.0-c++20-r2"
    assert flavour(INFO, cuda_ops=True, arches=("9.0",)) != flavour(INFO, cuda_ops=True)
    assert flavour({**INFO, "torch": "2.13.0+cpu"}, cuda_ops=False) != cpu
    assert want_cuda_ops(INFO, None) is False
    assert want_cuda_ops(INFO, True) is True


def test_patch_std_rewrites_every_cxx14_flag(tmp_path: Path) -> None:
    setup = tmp_path / "setup.py"
    setup.write_text("args = ['-std=c++14']\nnvcc = ['-std=c++14']\n")
    _patch_std(setup, "c++20")
    assert setup.read_text().count("-std=c++20") == 2 and "c++14" not in setup.read_text()
    setup.write_text("nothing here\n")
    with pytest.raises(EnvBuildError, match="no '-std=c\\+\\+14'"):
        _patch_std(setup, "c++20")


def test_env_stamp_is_stable_and_depends_on_the_ops_choice() -> None:
    auto, cuda = Choices(), Choices(cuda=True)
    assert digest(auto, False) == digest(auto, False)
    assert digest(auto, False) != digest(auto, True), "auto: what it resolved to decides"
    assert digest(auto, True) != digest(cuda, True), "an explicit --cuda is kept apart from auto"
    assert digest(Choices(cuda=True, arch_list=("9.0",)), True) != digest(cuda, True)
    cpu = Choices(cuda=False)
    assert digest(Choices(cuda=False, arch_list=("9.0",)), False) == digest(cpu, False), "CPU ops: no arch"
    assert digest(Choices(arch_list=("9.0",)), False) == digest(auto, False), "auto on CPU: no arch"
    assert digest(Choices(cuda=True, toolkit="index"), True) == digest(cuda, True), "the same wheel"
    assert digest(Choices(torch_from="/usr/bin/python3"), False) != digest(auto, False)


class FakeLog:
    """Stands in for BuildLog: records commands; `pip wheel` drops a fake wheel instead of compiling."""

    path = Path("build.log")

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        self.envs: list[dict] = []

    def say(self, message: str) -> None:
        pass

    def run(self, cmd, *, cwd=None, env=None, what=""):  # noqa: ANN001
        cmd = [str(c) for c in cmd]
        self.commands.append(cmd)
        src = Path(cmd[-1])
        assert (
            "-std=c++20" in (src / "setup.py").read_text() and "c++14" not in (src / "setup.py").read_text()
        )
        self.envs.append(env)
        assert env["MMCV_WITH_OPS"] == "1"
        if env["FORCE_CUDA"] == "0":
            assert env["CUDA_VISIBLE_DEVICES"] == "", "a CPU build hides GPUs from setup.py"
        out = Path(cmd[cmd.index("-w") + 1])
        out.mkdir(parents=True)
        (out / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"wheel")


def test_mmcv_wheel_is_built_once_from_the_patched_sdist_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from tiny_wheels import tiny_mmcv_sdist
    from upstream_env import mmcv_wheel

    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path))
    sdist = tmp_path / "wheels" / "sdist" / mmcv_wheel.SDIST
    sdist.parent.mkdir(parents=True)
    tiny_mmcv_sdist(sdist, mmcv_wheel.VERSION)
    monkeypatch.setattr(mmcv_wheel, "SDIST_SHA256", hashlib.sha256(sdist.read_bytes()).hexdigest())
    monkeypatch.setattr(mmcv_wheel, "probe", lambda python: INFO)
    log = FakeLog()
    dest = mmcv_wheel.ensure_mmcv_wheel(Path("python"), log, full_ops=True)  # type: ignore[arg-type]
    assert dest == tmp_path / "wheels" / "mmcv-full" / flavour(INFO, cuda_ops=False)
    assert (dest / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").exists()
    facts = json.loads((dest / "build-info.json").read_text())
    assert facts["cxx_std"] == "c++20" and facts["op_set"] == "full"
    assert len(log.commands) == 1 and "--no-build-isolation" in log.commands[0]
    assert mmcv_wheel.ensure_mmcv_wheel(Path("python"), log, full_ops=True) == dest  # type: ignore[arg-type]
    assert len(log.commands) == 1, "a cached wheel is reused, nothing is compiled again"
    with pytest.raises(EnvBuildError, match="pybind.cpp"):  # this sdist has no op sources to reduce
        mmcv_wheel.ensure_mmcv_wheel(Path("python"), log)  # type: ignore[arg-type]
