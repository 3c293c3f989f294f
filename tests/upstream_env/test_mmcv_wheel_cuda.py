"""The CUDA-ops build (hermetic, stdlib only): where nvcc comes from, the arch list, the wheel's key
and build facts, and the auto choice on a GPU-visible torch. Nothing is compiled here: `nox -s
cuda_build` compiles and checks the real thing (docs/upstream-env.md#cuda-ops).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from build_recorder import record_builds
from gpukit import probe
from tiny_wheels import tiny_mmcv_sdist
from upstream_env import EnvBuildError, cuda_toolkit, mmcv_wheel, node_torch, op_set
from upstream_env import __main__ as cli
from upstream_env.build import STAMP, Choices, read_stamp
from upstream_env.cuda_toolkit import DEFAULT_ARCHES, Toolkit, parse_arch_list
from upstream_env.mmcv_wheel import check_cached, expected_facts, flavour
from upstream_env.node_torch import node_requirements, torchvision_for, without_node_torch

GPU = {"tag": "cp311", "torch": "2.14.1+cu130", "torch_cuda": "13.0", "cuda_available": True}
HEADERS = cuda_toolkit.LIBRARY_HEADERS


def _nvcc(folder: Path, release: str = "13.0") -> Path:
    """A stand-in nvcc (a shell script): `--version`, and `_HERE_` in a compile's dry run only, as
    nvcc 13.0 prints them (`nvcc --dryrun --version` prints no `_HERE_`)."""
    nvcc = folder / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True, exist_ok=True)
    (folder / "include").mkdir(exist_ok=True)
    (folder / "include" / "cuda_runtime.h").write_text("")
    nvcc.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--dryrun*-c*) echo "#\\$ _HERE_={folder}/bin" >&2;; esac\n'  # a compile's dry run
        f'echo "Cuda compilation tools, release {release}, V{release}.88"\n'
    )
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    return nvcc


def _hide_system_nvcc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """PATH without any nvcc (this host has one in /usr/local/bin), no CUDA_HOME."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)


class Log:
    path = Path("build.log")

    def __init__(self, fail: str | None = None) -> None:
        self.fail, self.lines, self.commands = fail, [], []

    def say(self, message: str) -> None:
        self.lines.append(message)

    def run(self, cmd, *, cwd=None, env=None, what=""):  # noqa: ANN001
        self.commands.append(([str(c) for c in cmd], env))
        if self.fail:
            raise EnvBuildError(f"{what} failed (exit 1): {self.fail}")
        if "wheel" in cmd:  # pip wheel: drop a wheel where the builder looks
            out = Path(cmd[cmd.index("-w") + 1])
            out.mkdir(parents=True)
            (out / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"wheel")


def _torch_site(tmp_path: Path) -> Path:
    include = tmp_path / "site" / "nvidia" / "cu13" / "include"
    include.mkdir(parents=True)
    for header in HEADERS:
        (include / header).write_text("")
    return tmp_path / "site"


def test_auto_on_a_gpu_visible_torch_builds_the_cuda_set_with_the_index_nvcc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No silent CPU build on a GPU node: torch sees a GPU, the host has no nvcc: auto mode builds
    the reduced CUDA set with the index toolkit, for the default arches."""
    _hide_system_nvcc(monkeypatch, tmp_path)
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    site = _torch_site(tmp_path)
    monkeypatch.setattr(mmcv_wheel, "probe", lambda python: {**GPU, "torch_site": str(site)})
    index = Toolkit("index", tmp_path / "toolkit", "13.0", "V13.0.88")
    (index.home / "bin").mkdir(parents=True)
    (index.home / "bin" / "cuobjdump").write_text("")  # the index toolkit has one
    asked: list[str] = []
    monkeypatch.setattr(cuda_toolkit, "index_toolkit", lambda cuda, python, log: asked.append(cuda) or index)
    monkeypatch.setattr(mmcv_wheel, "sdist", lambda python, log: _tiny_sdist(tmp_path))
    cut = op_set.Reduction(op_set.kept_names(cuda=True), ("nms",), op_set.kept_units(cuda=True))
    monkeypatch.setattr(op_set, "reduce_sources", lambda src, cuda: cut if cuda else pytest.fail("a CPU set"))
    checked = {"cubins": ["sm_80", "sm_86", "sm_89", "sm_90"], "needed": ["libtorch_cuda.so"]}
    monkeypatch.setattr(mmcv_wheel, "_check_wheel", lambda wheel, tk, arches, tmp: checked)
    log = Log()
    dest = mmcv_wheel.ensure_mmcv_wheel(Path("python"), log)  # type: ignore[arg-type]
    assert asked == ["13.0"], "nvcc came from the index toolkit of torch's CUDA release"
    assert dest.name == flavour(GPU, cuda_ops=True, reduced=True)
    assert "cu13.0ops-reduced" in dest.name and "arch8.0_8.6_8.9_9.0" in dest.name
    (_, env), *_ = [c for c in log.commands if "wheel" in c[0]]
    assert env["FORCE_CUDA"] == "1" and "CUDA_VISIBLE_DEVICES" not in env
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0;8.6;8.9;9.0" and env["CUDA_HOME"] == str(index.home)
    assert env["CUDA_INC_PATH"] == str(site / "nvidia" / "cu13" / "include"), (
        "cuBLAS headers from torch's wheels"
    )
    facts = json.loads((dest / "build-info.json").read_text())
    assert (
        facts["cuda_ops"] is True and facts["toolkit"]["source"] == "index" and facts["cubins"][-1] == "sm_90"
    )
    assert "torch_site" not in facts, "where torch lies on the building machine is no fact of the wheel"
    check_cached(dest, expected_facts(GPU, True, True, DEFAULT_ARCHES))


def _tiny_sdist(tmp_path: Path) -> Path:
    sdist = tmp_path / mmcv_wheel.SDIST
    return sdist if sdist.exists() else tiny_mmcv_sdist(sdist, mmcv_wheel.VERSION)


def test_a_cpu_torch_keeps_cpu_ops_and_an_explicit_choice_wins() -> None:
    assert mmcv_wheel.want_cuda_ops({**GPU, "cuda_available": False}, None) is False
    assert mmcv_wheel.want_cuda_ops(GPU, None) is True
    assert mmcv_wheel.want_cuda_ops(GPU, False) is False, "--no-cuda on a GPU node is the user's word"
    assert mmcv_wheel.want_cuda_ops({**GPU, "torch_cuda": None}, None) is False, "a CPU build of torch"


def test_no_lock_and_no_fitting_nvcc_stops_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide_system_nvcc(monkeypatch, tmp_path)
    with pytest.raises(EnvBuildError) as exc:
        cuda_toolkit.choose("auto", "12.8", Path("python"), Log())  # type: ignore[arg-type]
    message = str(exc.value)
    assert "no toolkit lock for it (constraints/cuda-toolkit-12.8.txt)" in message
    assert "--toolkit system" in message and "requirements/cuda-toolkit.txt" in message
    with pytest.raises(EnvBuildError, match="--toolkit system: no nvcc on PATH"):
        cuda_toolkit.choose("system", "13.0", Path("python"), Log())  # type: ignore[arg-type]


def test_an_unreachable_index_names_the_wheelhouse_and_the_system_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path))
    log = Log(fail="No matching distribution found for nvidia-cuda-nvcc==13.0.88")
    with pytest.raises(EnvBuildError) as exc:
        cuda_toolkit.index_toolkit("13.0", Path("python"), log)  # type: ignore[arg-type]
    message = str(exc.value)
    assert "No matching distribution" in message and "STREAMPETR_WHEELHOUSE" in message
    assert "--toolkit system" in message and "--no-cuda" in message
    ((cmd, _),) = log.commands
    assert "--require-hashes" in cmd and "--no-deps" in cmd and cmd[-1].endswith("cuda-toolkit-13.0.txt")


def test_the_system_nvcc_is_found_behind_a_wrapper_and_chosen_when_its_release_is_torchs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "cuda-13.0"
    _nvcc(real)
    wrapper = tmp_path / "wrap" / "nvcc"  # like /usr/local/bin/nvcc: `exec <toolkit>/bin/nvcc "$@"`
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {real}/bin/nvcc "$@"\n')
    wrapper.chmod(0o755)
    _hide_system_nvcc(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    found = cuda_toolkit.system_toolkit()
    assert found == Toolkit("system", real, "13.0", "V13.0.88"), "CUDA_HOME is the toolkit, not the wrapper's"
    (real / "include" / "cuda_runtime.h").unlink()
    with pytest.raises(EnvBuildError, match="has no include/cuda_runtime.h; set CUDA_HOME to it"):
        cuda_toolkit.system_toolkit()
    (real / "include" / "cuda_runtime.h").write_text("")
    assert cuda_toolkit.choose("auto", "13.0", Path("python"), Log()) == found  # type: ignore[arg-type]
    assert cuda_toolkit.choose("system", "13.0", Path("python"), Log()) == found  # type: ignore[arg-type]
    with pytest.raises(EnvBuildError, match="torch is CUDA 12.8; torch refuses another major"):
        cuda_toolkit.choose("system", "12.8", Path("python"), Log())  # type: ignore[arg-type]
    index = Toolkit("index", tmp_path / "tk", "12.8", "V12.8.1")
    monkeypatch.setattr(cuda_toolkit, "index_toolkit", lambda cuda, python, log: index)
    monkeypatch.setattr(cuda_toolkit, "lock_file", lambda cuda: tmp_path / "cuda-toolkit-12.8.txt")
    (tmp_path / "cuda-toolkit-12.8.txt").write_text("")
    assert cuda_toolkit.choose("auto", "12.8", Path("python"), Log()) == index, "another release: the index's"
    assert cuda_toolkit.choose("index", "13.0", Path("python"), Log()) == index, "index: never the system's"


class InstallingLog(Log):
    """A pip that installs `nvidia/cu13/bin/<tool>` (a script answering `--version`) for each
    package of its requirement file into `--target`."""

    installed: list[str]

    def run(self, cmd, *, cwd=None, env=None, what=""):  # noqa: ANN001
        super().run(cmd, cwd=cwd, env=env, what=what)
        target = Path(cmd[cmd.index("--target") + 1])
        for line in Path(cmd[cmd.index("-r") + 1]).read_text().splitlines():
            self.installed = [*getattr(self, "installed", []), line]
            tool = line.split("==")[0].removeprefix("nvidia-cuda-")
            _nvcc(target / "nvidia" / "cu13").rename(target / "nvidia" / "cu13" / "bin" / tool)


def test_a_toolkit_without_cuobjdump_takes_the_cuobjdump_wheel_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This host's /usr/local/cuda-13.0 (and a node's toolkit made the same way) has nvcc and no
    cuobjdump: the build still checks its cubins, with the lock's cuobjdump wheel (0.3 MB) installed
    once into the wheel cache, not the whole index toolkit (100 MB a driver-only node lacks)."""
    _hide_system_nvcc(monkeypatch, tmp_path)
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    system = Toolkit("system", tmp_path / "cuda", "13.0", "V13.0.88")
    monkeypatch.setattr(cuda_toolkit, "index_toolkit", lambda *a: pytest.fail("the whole index toolkit"))
    log = InstallingLog()
    found = cuda_toolkit.cuobjdump(system, Path("python"), log)  # type: ignore[arg-type]
    assert found.parent.parent.parent.parent.parent == tmp_path / "cache" / "wheels" / "cuda-toolkit"
    assert found.name == "cuobjdump" and found.parents[3].name.startswith("cuobjdump-cuda-toolkit-13.0-")
    ((cmd, _),) = log.commands
    assert "--require-hashes" in cmd and "--no-deps" in cmd
    lock = cuda_toolkit.lock_file("13.0").read_text().splitlines()
    assert log.installed == [
        ln for ln in lock if ln.startswith("nvidia-cuda-cuobjdump==13.2.51 --hash=sha256:")
    ]
    assert cuda_toolkit.cuobjdump(system, Path("python"), log) == found and len(log.commands) == 1, "once"
    found.write_text("#!/bin/sh\nexit 1\n")  # a damaged one is installed again
    assert cuda_toolkit.cuobjdump(system, Path("python"), log) == found and len(log.commands) == 2
    (system.home / "bin").mkdir(parents=True)
    (system.home / "bin" / "cuobjdump").write_text("")
    assert cuda_toolkit.cuobjdump(system, Path("python"), log) == system.home / "bin" / "cuobjdump"
    assert len(log.commands) == 2, "its own first"


def test_the_library_headers_come_from_torchs_wheels_when_the_toolkit_lacks_them(tmp_path: Path) -> None:
    toolkit = Toolkit("index", tmp_path / "tk", "13.0", "V13.0.88")
    site = _torch_site(tmp_path)
    assert cuda_toolkit.library_headers(toolkit, str(site)) == site / "nvidia" / "cu13" / "include"
    (site / "nvidia" / "cu13" / "include" / "cusolverDn.h").unlink()
    with pytest.raises(EnvBuildError, match="cublas_v2.h, cusparse.h, cusolverDn.h: neither"):
        cuda_toolkit.library_headers(toolkit, str(site))
    (tmp_path / "tk" / "include").mkdir(parents=True)
    for header in HEADERS:
        (tmp_path / "tk" / "include" / header).write_text("")
    assert cuda_toolkit.library_headers(toolkit, str(site)) is None, "a full system toolkit has them"


def test_a_cached_toolkit_is_reused_only_while_its_facts_hold(tmp_path: Path) -> None:
    lock = tmp_path / "cuda-toolkit-13.0.txt"
    lock.write_text("nvidia-cuda-nvcc==13.0.88 --hash=sha256:00\n")
    folder = tmp_path / "cuda-toolkit-13.0-abcd"
    home = folder / "nvidia" / "cu13"
    _nvcc(home)
    facts = {"home": str(home), "lock_sha256": cuda_toolkit.sha256(lock)}
    (folder / cuda_toolkit.FACTS).write_text(json.dumps(facts))
    assert cuda_toolkit._cached(folder, lock, "13.0") == Toolkit("index", home, "13.0", "V13.0.88")
    assert cuda_toolkit._cached(folder, lock, "13.1") is None, "an nvcc of another release"
    lock.write_text("nvidia-cuda-nvcc==13.0.89 --hash=sha256:11\n")
    assert cuda_toolkit._cached(folder, lock, "13.0") is None, "another lock: reinstalled"
    (folder / cuda_toolkit.FACTS).write_text("{damaged")
    assert cuda_toolkit._cached(folder, lock, "13.0") is None


def test_arch_lists_are_checked() -> None:
    assert parse_arch_list("9.0") == ("9.0",)
    assert parse_arch_list("8.0;8.6 8.9,9.0+PTX") == ("8.0", "8.6", "8.9", "9.0+PTX")
    assert parse_arch_list("9.0a") == ("9.0a",)
    for bad in ("", "sm_90", "9", "9.0;hopper"):
        with pytest.raises(EnvBuildError, match="--cuda-arch"):
            parse_arch_list(bad)


def test_a_cached_cuda_wheel_whose_facts_disagree_with_its_folder_is_refused(tmp_path: Path) -> None:
    want = expected_facts(GPU, True, True, DEFAULT_ARCHES)
    good = {**want, "toolkit": {"source": "index"}}
    dest = tmp_path / flavour(GPU, cuda_ops=True, reduced=True)
    dest.mkdir()
    (dest / "build-info.json").write_text(json.dumps(good))
    check_cached(dest, want)
    for fact, wrong in (
        ("arch_list", ["9.0"]),
        ("cuda", "12.8"),
        ("cuda_ops", False),
        ("compiled_ops", ["nms"]),
    ):
        (dest / "build-info.json").write_text(json.dumps({**good, fact: wrong}))
        with pytest.raises(EnvBuildError, match=re.escape(f"disagree with its folder {dest.name}: {fact} ")):
            check_cached(dest, want)
    assert want["compiled_ops"] == list(op_set.kept_names(cuda=True))


def test_the_arch_list_and_toolkit_persist_like_the_other_ops_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds = record_builds(monkeypatch)
    env = str(tmp_path / "env")
    assert cli.main(["build", "--env", env, "--cuda", "--cuda-arch", "9.0", "--toolkit", "index"]) == 0
    assert cli.main(["build", "--env", env]) == 0, "train_dali after it: the same env, nothing rebuilt"
    assert len(builds) == 1 and builds[0].arch_list == ("9.0",) and builds[0].toolkit == "index"
    assert cli.main(["build", "--env", env, "--clean"]) == 0
    assert builds[-1] == Choices(cuda=True, arch_list=("9.0",), toolkit="index"), "kept across --clean"
    assert cli.main(["build", "--env", env, "--arch-list", "8.0;9.0"]) == 0
    assert builds[-1].arch_list == ("8.0", "9.0") and builds[-1].cuda is True
    stamp = read_stamp(tmp_path / "env")
    assert stamp is not None and stamp["arch_list"] == ["8.0", "9.0"]
    assert json.loads((tmp_path / "env" / STAMP).read_text())["toolkit"] == "index"
    with pytest.raises(SystemExit):
        cli.main(["build", "--env", env, "--cuda-arch", "sm_90"])


def test_mmcv_wheel_runs_with_the_choices_build_then_takes_and_leaves_no_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node's background step (`mmcv-wheel`) and its env step (`build`), given the same flags,
    resolve the same choices, hence the same wheel key (`flavour` of the same probe): the build finds
    the wheel the background step made. `mmcv-wheel` writes no stamp: the env is not built yet."""
    mmcv_runs: list[Choices] = []
    builds = record_builds(monkeypatch, mmcv_runs)
    flags = ["--env", str(tmp_path / "env"), "--torch-from", "/node/python3", "--cuda", "--cuda-arch", "9.0"]
    assert cli.main(["mmcv-wheel", *flags]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "env" / "wheel-folder"), "it prints the folder"
    assert read_stamp(tmp_path / "env") is None and builds == []
    assert cli.main(["build", *flags]) == 0
    assert mmcv_runs == builds == [Choices(cuda=True, arch_list=("9.0",), torch_from="/node/python3")]
    assert cli.main(["mmcv-wheel", *flags]) == 0 and len(mmcv_runs) == 2, "a built env: it still answers"


def test_torch_from_drops_the_lines_pinning_torch_and_its_cuda_wheels() -> None:
    text = (
        "numpy==1.26.4\ntorch==2.14.1\ntorchvision==0.29.1\ntriton==3.8.0\ncuda-toolkit==13.0.3.0\n"
        "nvidia-cublas==13.1.1.3\nnvidia-nccl-cu13==2.30.7\nnvidia-dali-cuda120==2.4.0\n"
        "nvidia-nvjpeg-cu12==12.4.0.76\n# a comment\nmmcv-full==1.6.0\n"
    )
    kept = without_node_torch(text).splitlines()
    assert kept == [
        "numpy==1.26.4",
        "nvidia-dali-cuda120==2.4.0",
        "nvidia-nvjpeg-cu12==12.4.0.76",
        "# a comment",
        "mmcv-full==1.6.0",
    ]
    assert torchvision_for("2.11.0+cu130") == "0.26.*" and torchvision_for("2.14.1") == "0.29.*"
    with pytest.raises(EnvBuildError, match="only torch 2.x"):
        torchvision_for("3.0.0")


def test_the_node_requirements_take_dalis_build_of_the_nodes_cuda_and_leave_mmcv_to_no_deps() -> None:
    """What `--torch-from` installs (and the stack kit carries): DALI of the node torch's CUDA major,
    mmcv-full out of the resolution (installed --no-deps: its metadata asks for opencv-python, 61 MiB
    the env does not need beside opencv-python-headless), its other requirements in, each once."""
    text = (
        "torch==2.14.1\nnvidia-dali-cuda120==2.4.0\nmmcv-full==1.6.0\nyapf==0.40.1\nopencv-python-headless\n"
    )
    lines = [line for line in node_requirements(text, 13).splitlines() if not line.startswith("#")]
    kept = ["nvidia-dali-cuda130==2.4.0", "yapf==0.40.1", "opencv-python-headless"]
    assert lines == [*kept, "addict", "packaging", "pyyaml"]
    assert "nvidia-dali-cuda120==2.4.0" in node_requirements(text, 12)
    with pytest.raises(EnvBuildError, match=re.escape("DALI builds exist for CUDA [12, 13]")):
        node_requirements(text, 11)


def test_the_toolkit_lock_is_hash_locked_at_torchs_cuda_toolkit_pin() -> None:
    """constraints/cuda-toolkit-13.0.txt: every package of requirements/cuda-toolkit.txt, pinned with
    a sha256, and the runtime at the version the OpenMMLab env's torch installs."""
    lock = cuda_toolkit.lock_file("13.0")
    lines = [line for line in lock.read_text().splitlines() if line and not line.startswith("#")]
    wanted = [
        line
        for line in (lock.parents[1] / "requirements" / "cuda-toolkit.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert sorted(line.split("==")[0] for line in lines) == sorted(wanted)
    assert all(" --hash=sha256:" in line and len(line.split("sha256:")[1]) == 64 for line in lines)
    env = (lock.parents[1] / "constraints" / "upstream.txt").read_text()
    assert "nvidia-cuda-runtime==13.0.96" in env and "nvidia-cuda-runtime==13.0.96 " in lock.read_text()
    assert "cuda-toolkit==13.0.3.0" in env, "the torch pin whose [nvcc,cccl] extras the lock follows"


def test_torch_from_makes_the_nodes_torch_importable_and_adds_torchvision(tmp_path: Path) -> None:
    """`--torch-from`: this interpreter stands for the node's python (its torch is a CPU build here)."""
    import subprocess
    import sys

    from upstream_env.build import _purelib

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    python = env / "bin" / "python"
    log = Log()
    node = probe(Path(sys.executable), link_into=_purelib(python))
    constraints, requirements = node_torch.prepare(env, python, node, log)
    import torch

    where = subprocess.run(
        [python, "-c", "import torch; print(torch.__file__, torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where == [torch.__file__, torch.__version__], "the env imports the node's torch"
    assert "torch==" not in constraints.read_text() and "nvidia-cublas" not in constraints.read_text()
    assert "torchvision==" not in requirements.read_text() and "mmcv-full==" not in requirements.read_text()
    dali = "cuda130" if (torch.version.cuda or "").startswith("13") else "cuda120"  # PyPI's torch on 3.12+
    assert f"nvidia-dali-{dali}==2.4.0" in requirements.read_text(), "DALI for the node torch's CUDA major"
    ((cmd, _),) = log.commands  # this torch has no torchvision beside it: the matching series, no deps
    assert cmd[-2:] == ["--no-deps", f"torchvision=={torchvision_for(torch.__version__)}"]


def test_the_probe_names_the_folder_torch_is_imported_from_not_where_its_links_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node python whose torch is a link farm (the rehearsal's stand-in: links into another env)
    must put the farm on the env's path, not the folder the links point into, whose every other
    package the env would then take for installed."""
    import sys

    import torch

    farm = tmp_path / "farm"
    farm.mkdir()
    (farm / "torch").symlink_to(Path(torch.__file__).parent)
    monkeypatch.setenv("PYTHONPATH", str(farm))
    node = probe(Path(sys.executable))
    assert node["torch_site"] == str(farm)
    assert (
        node["tag"] == f"cp{sys.version_info[0]}{sys.version_info[1]}" and node["torch"] == torch.__version__
    )


def test_without_a_gpu_device_file_the_probe_reads_torch_s_version_and_imports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No NVIDIA device file: the probe answers as the import of torch does, without importing it (a
    torch whose import fails still reads); with one, torch is imported."""
    import sys

    from gpukit import CheckError
    from gpukit import node as gpukit_node

    monkeypatch.setattr(gpukit_node, "GPU_DEVICE_FILES", (str(tmp_path / "none"),))
    light = probe(Path(sys.executable))
    (tmp_path / "nvidiactl").touch()
    monkeypatch.setattr(gpukit_node, "GPU_DEVICE_FILES", (str(tmp_path / "nvidiactl"),))
    assert probe(Path(sys.executable)) == light  # imported: this host has no GPU either
    broken = tmp_path / "site" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a torch that does not import')\n")
    (broken / "version.py").write_text("__version__ = '9.9.9+cu999'\ncuda = '99.9'\n")
    monkeypatch.setenv("PYTHONPATH", str(broken.parent))
    with pytest.raises(CheckError, match="does not import"):
        probe(Path(sys.executable))  # a device file: torch imported
    monkeypatch.setattr(gpukit_node, "GPU_DEVICE_FILES", (str(tmp_path / "none"),))
    assert probe(Path(sys.executable)) == {
        **light,
        "torch": "9.9.9+cu999",
        "torch_cuda": "99.9",
        "torch_site": str(broken.parent),
    }
