"""The reduced mmcv op set (hermetic, stdlib only): pybind.cpp registers every name, the kept ones
as they are and the others as stubs naming themselves; the sources of the left-out ops are gone;
the wheel cache key and build facts say "reduced" so no full or CUDA env is served such a wheel;
the env digest follows the op set and nothing else of the progress code.

The rewrite runs on the real mmcv-full 1.6.0 sdist, fetched into the wheel cache as the builder
fetches it when the cache lacks it (skipped only where the index cannot be reached).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest
from build_recorder import record_builds
from gpukit import unpack
from upstream_env import EnvBuildError, op_set
from upstream_env import __main__ as cli
from upstream_env import build as builder
from upstream_env.build import BUILDER_MODULES, STAMP, Choices, digest
from upstream_env.mmcv_wheel import SDIST, SDIST_SHA256, check_cached, expected_facts, flavour, reduced_ops
from upstream_env.mmcv_wheel import sdist as mmcv_sdist
from upstream_env.paths import wheel_cache

INFO = {"tag": "cp311", "torch": "2.14.1+cu130", "torch_cuda": "13.0", "cuda_available": False}
CUDA_UNITS = [
    "cuda/cudabind.cpp",
    "cuda/focal_loss_cuda.cu",
    "cuda/ms_deform_attn_cuda.cu",
    "focal_loss.cpp",
    "info.cpp",
    "ms_deform_attn.cpp",
    "pybind.cpp",
]
DEF = re.compile(r'^\s*m\.def\("(\w+)"', re.M)


@pytest.fixture(scope="module")
def sdist_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real sdist, unpacked once as the builder unpacks it (its sha256 checked)."""
    try:
        sdist = mmcv_sdist(Path(sys.executable))
    except EnvBuildError as exc:
        pytest.skip(f"no {SDIST} in the wheel cache ({wheel_cache() / 'sdist'}) and none downloaded: {exc}")
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == SDIST_SHA256
    out = tmp_path_factory.mktemp("mmcv")
    unpack(sdist, out)
    return out / "mmcv-full-1.6.0"


def _module_body(text: str) -> str:
    return text[text.index(op_set.MODULE_START) :]


def test_every_name_stays_registered_kept_ones_verbatim(sdist_tree: Path) -> None:
    original = (sdist_tree / op_set.PYBIND).read_text()
    new, stubbed = op_set.rewrite_pybind(original, op_set.kept_names())
    before, after = DEF.findall(_module_body(original)), DEF.findall(_module_body(new))
    assert len(before) == 100 and len(set(before)) == 99, "knn_forward is registered twice upstream"
    assert set(after) == set(before), "every name of mmcv._ext stays registered"
    assert set(stubbed) == set(before) - set(op_set.kept_names())
    assert len(after) == len(set(after)), "a name registered twice upstream (knn_forward) gets one stub"
    for name in op_set.kept_names():
        statement = re.search(rf'm\.def\("{name}",.*?\);', _module_body(original), re.S)
        assert statement and statement.group(0) in new, f"{name}: kept as upstream registers it"
    for name in stubbed:
        assert (
            f'm.def("{name}", [](py::args, py::kwargs) -> py::object {{ streampetr_not_compiled("{name}"); }}'
            in new
        )
    assert op_set.FULL_OPS_HINT in new and "PyExc_NotImplementedError" in new
    # the CPU set's kept names are version strings: pybind11's head, not torch's (5.6 s against 21)
    assert new.startswith(op_set.PYBIND11_ONLY) and "torch/extension.h" not in new
    assert "std::string get_compiler_version();" in new and "Tensor" not in new
    cuda, _ = op_set.rewrite_pybind(original, op_set.kept_names(cuda=True), cuda=True)
    assert cuda.startswith(original[: original.index(op_set.MODULE_START)]), "a set of tensor ops keeps all"


def test_reduce_sources_keeps_only_the_kept_units(sdist_tree: Path, tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(sdist_tree, src)
    root = src / op_set.PYTORCH_SRC
    assert len([*root.glob("*.cpp"), *root.glob("cpu/*.cpp")]) == 67, "the full CPU build's 67 units"
    cut = op_set.reduce_sources(src)
    left = sorted(str(p.relative_to(root)) for p in [*root.glob("*.cpp"), *root.glob("cpu/*.cpp")])
    assert left == sorted(cut.units) == sorted(op_set.kept_units())
    assert (root / "cuda" / "cudabind.cpp").exists(), "only the CPU build's globs are reduced"
    assert len(cut.stubbed_ops) + len(cut.compiled_ops) == 99


def test_a_kept_name_pybind_lacks_or_a_foreign_statement_is_a_named_error() -> None:
    text = op_set.MODULE_START + '\n  m.def("nms", &nms, "nms");\n}\n'
    with pytest.raises(EnvBuildError, match=r"pybind\.cpp: the reduced op set keeps get_compiler_version"):
        op_set.rewrite_pybind(text, ("get_compiler_version",), "pybind.cpp")
    odd = op_set.MODULE_START + '\n  py::class_<Foo>(m, "Foo");\n}\n'
    with pytest.raises(EnvBuildError, match=r"expected `m\.def\(` or `}` .*py::class_"):
        op_set.rewrite_pybind(odd, (), "pybind.cpp")
    with pytest.raises(EnvBuildError, match="no `PYBIND11_MODULE"):
        op_set.rewrite_pybind("int main() {}", (), "pybind.cpp")
    new, stubbed = op_set.rewrite_pybind(text, (), "pybind.cpp")
    assert stubbed == ("nms",) and "&nms" not in new


def test_reduce_sources_names_a_missing_kept_source(tmp_path: Path) -> None:
    (tmp_path / op_set.PYTORCH_SRC).mkdir(parents=True)
    (tmp_path / op_set.PYBIND).write_text(op_set.MODULE_START + "\n}\n")
    with pytest.raises(EnvBuildError, match="sources info.cpp are missing"):
        op_set.reduce_sources(tmp_path)


def test_a_reduced_wheel_has_its_own_cache_key_and_never_a_cuda_one() -> None:
    full, reduced = flavour(INFO, cuda_ops=False), flavour(INFO, cuda_ops=False, reduced=True)
    assert full == "cp311-torch2.14.1+cu130-cpuops-c++20-r2", "the full CPU key is unchanged"
    assert reduced == "cp311-torch2.14.1+cu130-cpuops-reduced-7d11cf51-c++20-r2", "pybind11's head: a new key"
    cuda_reduced = flavour(INFO, cuda_ops=True, reduced=True)
    assert (
        cuda_reduced
        == f"cp311-torch2.14.1+cu130-cu13.0ops-reduced-{op_set.label(True)}-arch8.0_8.6_8.9_9.0-c++20-r2"
    )
    assert cuda_reduced != flavour(INFO, cuda_ops=True) and op_set.label(True) != op_set.label()
    assert reduced_ops(cuda_ops=False, full_ops=False)
    assert reduced_ops(cuda_ops=True, full_ops=False), "a CUDA build compiles the CUDA set by default"
    assert not reduced_ops(cuda_ops=False, full_ops=True) and not reduced_ops(cuda_ops=True, full_ops=True)


def _cached(tmp_path: Path, facts: dict | str) -> Path:
    dest = tmp_path / "wheel"
    dest.mkdir(exist_ok=True)
    (dest / "build-info.json").write_text(facts if isinstance(facts, str) else json.dumps(facts))
    return dest


def test_cached_build_facts_must_match_the_folders_op_set(tmp_path: Path) -> None:
    want_reduced, want_full = (expected_facts(INFO, False, r, ()) for r in (True, False))
    reduced = {"op_set": "reduced", "compiled_ops": list(op_set.kept_names()), "cuda_ops": False}
    check_cached(_cached(tmp_path, reduced), want_reduced)
    check_cached(_cached(tmp_path, {"cxx_std": "c++20"}), want_full)  # wheels from before op_set
    check_cached(_cached(tmp_path, {"op_set": "full"}), want_full)
    with pytest.raises(EnvBuildError, match="op set is 'reduced'.*op_set 'reduced' \\(its folder: 'full'\\)"):
        check_cached(_cached(tmp_path, reduced), want_full)
    with pytest.raises(EnvBuildError, match="op set is 'full'.*op_set 'full' \\(its folder: 'reduced'\\)"):
        check_cached(_cached(tmp_path, {"op_set": "full"}), want_reduced)
    with pytest.raises(EnvBuildError, match="op set is 'reduced'.*compiled_ops"):
        check_cached(_cached(tmp_path, {**reduced, "compiled_ops": ["nms"]}), want_reduced)
    with pytest.raises(EnvBuildError, match="cuda_ops True"):
        check_cached(_cached(tmp_path, {**reduced, "cuda_ops": True}), want_reduced)
    with pytest.raises(EnvBuildError, match="unreadable build facts"):
        check_cached(_cached(tmp_path, "{not json"), want_reduced)


def test_digest_follows_the_op_set_but_not_the_progress_code() -> None:
    assert digest(Choices(cuda=False), False) != digest(Choices(cuda=False, full_ops=True), False)
    cuda, cuda_full = Choices(cuda=True), Choices(cuda=True, full_ops=True)
    assert digest(cuda, True) != digest(cuda_full, True), "CUDA builds have a reduced set too"
    here = Path(builder.__file__).parent
    assert all((here / name).is_file() for name in BUILDER_MODULES)
    assert "op_set.py" in BUILDER_MODULES
    assert not {"runlog.py", "timings.py", "__main__.py"} & set(BUILDER_MODULES)


def test_full_ops_is_kept_by_later_builds_like_the_cuda_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds = record_builds(monkeypatch)
    env = str(tmp_path / "env")
    assert cli.main(["build", "--env", env]) == 0
    assert cli.main(["build", "--env", env, "--full-ops"]) == 0
    assert cli.main(["build", "--env", env]) == 0, "train_dali after --full-ops keeps the full set"
    assert cli.main(["build", "--env", env, "--clean"]) == 0
    assert [(b.cuda, b.full_ops) for b in builds] == [(None, False), (None, True), (None, True)]
    assert json.loads((tmp_path / "env" / STAMP).read_text())["full_ops"] is True
    assert cli.main(["build", "--env", env, "--reduced-ops"]) == 0
    assert (builds[-1].cuda, builds[-1].full_ops) == (None, False)


def test_the_cuda_set_keeps_its_units_and_cuts_cudabind_to_them(sdist_tree: Path, tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(sdist_tree, src)
    root = src / op_set.PYTORCH_SRC
    bind = (root / op_set.CUDABIND).read_text()
    assert len(list(root.glob("cuda/*.cu"))) == 50 and len(op_set.REGISTER.findall(bind)) == 88
    cut = op_set.reduce_sources(src, cuda=True)
    left = sorted(str(p.relative_to(root)) for g in ("*.cpp", "cpu/*.cpp", "cuda/*") for p in root.glob(g))
    assert left == sorted(cut.units) == CUDA_UNITS, "no CPU kernel registers focal loss or ms_deform_attn"
    assert (
        cut.compiled_ops == op_set.kept_names(cuda=True)
        and len(cut.stubbed_ops) + len(cut.compiled_ops) == 99
    )
    new = (root / op_set.CUDABIND).read_text()
    keys = {
        k
        for u in ("focal_loss.cpp", "ms_deform_attn.cpp")
        for k in op_set.DISPATCH_KEY.findall((root / u).read_text())
    }
    assert {m[0] for m in op_set.REGISTER.findall(new)} == keys and len(keys) == 6
    kernels = (root / "cuda/focal_loss_cuda.cu").read_text() + (
        root / "cuda/ms_deform_attn_cuda.cu"
    ).read_text()
    _, external = op_set.cut_cudabind(bind, keys)
    assert external and all(re.search(rf"\b{f}\s*\(", kernels) for f in external), external
    for other in ("NMSCUDAKernelLauncher", "roi_align_forward_cuda", "hard_voxelize_forward_impl"):
        assert other in bind and other not in new, f"{other}: another op's binding is cut"


def test_a_cuda_set_missing_a_kernel_or_a_registration_is_a_named_error(
    sdist_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(sdist_tree, src)
    names, _ = op_set.KEPT_CUDA["focal_loss"]
    monkeypatch.setitem(op_set.KEPT_CUDA, "focal_loss", (names, ("focal_loss.cpp",)))  # its .cu forgotten
    with pytest.raises(
        EnvBuildError, match="cudabind.cpp: the kept ops need SigmoidFocalLossBackwardCUDAKernelLauncher"
    ):
        op_set.reduce_sources(src, cuda=True)
    with pytest.raises(EnvBuildError, match="cudabind.cpp: no CUDA registration of made_up_impl"):
        op_set.cut_cudabind(
            (sdist_tree / op_set.PYBIND).parent.joinpath(op_set.CUDABIND).read_text(), {"made_up_impl"}
        )
