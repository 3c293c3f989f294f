"""The project's sources the GPU check kit carries: one byte-stable archive of what the check runs."""

from __future__ import annotations

from pathlib import Path

from gpu_kits.kit_folder import source_archive, source_files

REPO = Path(__file__).resolve().parents[2]
NEEDED = (
    "pyproject.toml",
    "tests/gpu/test_loader_gpu.py",
    "tests/float_tolerance.py",
    "scripts/gpukit/plugin.py",
    "scripts/loaderbench/sweep/kit.py",
    "scripts/synthdata/__main__.py",
    "overlay/dali_streampetr/loader.py",
    "scripts/overlaytool/targets.py",  # the repository root synthdata and loaderbench take
    "scripts/overlaytool/atomic_write.py",  # their house writer
)


def test_the_source_archive_is_byte_stable_and_holds_what_the_check_runs(tmp_path: Path) -> None:
    a = source_archive(tmp_path / "a.tar.gz")
    b = source_archive(tmp_path / "b.tar.gz")
    assert a.read_bytes() == b.read_bytes()
    names = source_files(REPO)
    for needed in NEEDED:
        assert needed in names
    assert not any(n.startswith(("tests/conftest", "scripts/upstream_env")) for n in names)
