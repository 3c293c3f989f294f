"""``STREAMPETR_WHEELHOUSE``: the folder is verified, the source-built wheels seeded, pip pointed at it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wheelhouse import WheelhouseError
from wheelhouse.offline import activate
from wheelhouse.requirement_locks import write_sums


def fake_wheelhouse(folder: Path) -> Path:
    (folder / "locks").mkdir(parents=True)
    for name in ("mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl", "mmdet3d-1.0.0rc6-py3-none-any.whl",
                 "mmcv-full-1.6.0.tar.gz", "six-1.17.0-py2.py3-none-any.whl"):  # fmt: skip
        (folder / name).write_bytes(name.encode())
    facts = {
        "mmcv-full": {"file": "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl", "cache_dir": "cp311-flavour",
                      "build_info": {"cuda_ops": False}},
        "mmdet3d": {"file": "mmdet3d-1.0.0rc6-py3-none-any.whl", "cache_dir": "abcdef123456"},
        "sdist": "mmcv-full-1.6.0.tar.gz",
    }  # fmt: skip
    (folder / "locks" / "source-built.json").write_text(json.dumps(facts))
    write_sums(folder)
    return folder


def test_activate_seeds_the_wheel_cache_once_and_disables_the_index(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    folder = fake_wheelhouse(tmp_path / "wh")
    assert activate(folder) == {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder.resolve())}
    wheels = tmp_path / "cache" / "wheels"
    mmcv = wheels / "mmcv-full" / "cp311-flavour"
    assert (mmcv / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").read_bytes().startswith(b"mmcv_full")
    assert json.loads((mmcv / "build-info.json").read_text()) == {"cuda_ops": False}
    assert (wheels / "mmdet3d" / "abcdef123456" / "mmdet3d-1.0.0rc6-py3-none-any.whl").exists()
    assert (wheels / "sdist" / "mmcv-full-1.6.0.tar.gz").exists()
    (mmcv / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"a wheel built here")
    activate(folder)  # an existing cache entry is the user's: kept
    assert (mmcv / "mmcv_full-1.6.0-cp311-cp311-linux_x86_64.whl").read_bytes() == b"a wheel built here"


def test_a_corrupt_wheelhouse_is_refused_before_anything_is_seeded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    folder = fake_wheelhouse(tmp_path / "wh")
    (folder / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"tampered")
    with pytest.raises(WheelhouseError, match=r"six-1\.17\.0-py2\.py3-none-any\.whl: sha256 differs"):
        activate(folder)
    assert not (tmp_path / "cache").exists()
    with pytest.raises(WheelhouseError, match="no such folder"):
        activate(tmp_path / "nowhere")


def test_a_stack_kits_wheelhouse_seeds_the_sdist_and_mmdet3d_without_an_mmcv_wheel(
    tmp_path, monkeypatch
) -> None:
    """The stack kit carries mmcv-full's sdist only (the node compiles it): nothing is seeded under
    mmcv-full, mmdet3d and the sdist are."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    folder = fake_wheelhouse(tmp_path / "wh")
    facts = json.loads((folder / "locks" / "source-built.json").read_text())
    (folder / "locks" / "source-built.json").write_text(json.dumps({**facts, "mmcv-full": None}))
    write_sums(folder)
    activate(folder)
    wheels = tmp_path / "cache" / "wheels"
    assert not (wheels / "mmcv-full").exists()
    assert (wheels / "mmdet3d" / "abcdef123456" / "mmdet3d-1.0.0rc6-py3-none-any.whl").exists()
    assert (wheels / "sdist" / "mmcv-full-1.6.0.tar.gz").exists()
