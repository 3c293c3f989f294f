"""What a wheelhouse carries of the wheel cache goes back where the env builder looks: the facts
``SourceBuilt`` writes name each file and its cache folder, and seeding a fresh cache from the
files and those facts gives the same folders (a stack kit's, without an mmcv-full wheel, too)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from upstream_env import SourceBuilt
from upstream_env.paths import store_wheel, wheel_cache

MMCV = "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl"
MMDET3D = "mmdet3d-1.0.0rc6-py3-none-any.whl"
SDIST = "mmcv-full-1.6.0.tar.gz"


def cached(tmp_path: Path, with_mmcv: bool) -> SourceBuilt:
    """A wheel cache holding the files as the builder leaves them (build facts beside mmcv-full's)."""
    made = tmp_path / "made"
    made.mkdir()
    for name in (MMCV, MMDET3D, SDIST):
        (made / name).write_bytes(name.encode())
    mmcv = wheel_cache() / "mmcv-full" / "cp311-flavour"
    if with_mmcv:
        store_wheel(made / MMCV, mmcv, {"cuda_ops": False})
    mmdet3d = wheel_cache() / "mmdet3d" / "abcdef123456"
    store_wheel(made / MMDET3D, mmdet3d)
    (wheel_cache() / "sdist").mkdir(parents=True)
    sdist = Path(shutil.copy2(made / SDIST, wheel_cache() / "sdist" / SDIST))
    return SourceBuilt(mmcv if with_mmcv else None, mmdet3d, sdist)


@pytest.mark.parametrize("with_mmcv", [True, False], ids=["env", "stack-kit"])
def test_the_facts_name_each_file_and_a_fresh_cache_gets_the_same_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_mmcv: bool
) -> None:
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    built = cached(tmp_path, with_mmcv)
    facts = json.loads(json.dumps(built.facts()))  # as locks/source-built.json holds them
    mmcv = {"file": MMCV, "cache_dir": "cp311-flavour", "build_info": {"cuda_ops": False}}
    assert facts == {
        "mmcv-full": mmcv if with_mmcv else None,
        "mmdet3d": {"file": MMDET3D, "cache_dir": "abcdef123456"},
        "sdist": SDIST,
    }
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    for path in built.files():
        shutil.copy2(path, wheelhouse / path.name)
    assert sorted(p.name for p in wheelhouse.iterdir()) == sorted([MMDET3D, SDIST] + [MMCV] * with_mmcv)

    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "fresh"))
    seeded = SourceBuilt.seed(wheelhouse, facts)
    assert [p.relative_to(wheel_cache()) for p in seeded] == [
        *([Path("mmcv-full/cp311-flavour")] if with_mmcv else []),
        Path("mmdet3d/abcdef123456"),
        Path("sdist") / SDIST,
    ]
    again = SourceBuilt(seeded[0] if with_mmcv else None, seeded[-2], seeded[-1])
    assert again.facts() == facts, "the seeded cache says what the wheelhouse said"
    assert SourceBuilt.seed(wheelhouse, facts) == [], "entries already there are kept"
