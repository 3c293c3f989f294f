"""ensure_dataset: made once, stamp-guarded, rebuilds half-written sets, refuses bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthdata import ensure_dataset
from synthdata.__main__ import main
from synthdata.dataset import MARKER, STAMP, default_root


def test_made_once_and_rebuilt_when_half_written(tmp_path: Path) -> None:
    root = ensure_dataset(tmp_path / "ds", scenes=1, samples_per_scene=1, seed=3, jobs=1)
    assert root == (tmp_path / "ds").resolve() and (root / STAMP).is_file() and not (root / MARKER).exists()
    pkl = root / "nuscenes2d_temporal_infos_train.pkl"
    mtime = pkl.stat().st_mtime_ns
    assert ensure_dataset(root, scenes=1, samples_per_scene=1, seed=3) == root
    assert pkl.stat().st_mtime_ns == mtime  # a rerun is a no-op
    (root / STAMP).unlink()
    (root / MARKER).write_text("interrupted")
    pkl.unlink()
    ensure_dataset(root, scenes=1, samples_per_scene=1, seed=3, jobs=1)
    assert pkl.is_file() and (root / STAMP).is_file() and not (root / MARKER).exists()
    # Other parameters at the same place: rebuilt, not reused.
    ensure_dataset(root, scenes=1, samples_per_scene=2, seed=3, jobs=1)
    assert len(list((root / "samples" / "CAM_FRONT").glob("*.jpg"))) == 2


def test_refuses_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not made by synthdata"):
        ensure_dataset(tmp_path, scenes=1, samples_per_scene=1)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scenes": 0}, "scenes"),
        ({"scenes": 11}, "1..10"),
        ({"samples_per_scene": 0}, "samples_per_scene"),
        ({"seed": -1}, "seed"),
        ({"scenes": 2.5}, "scenes"),
    ],
)
def test_bad_parameters(tmp_path: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ensure_dataset(tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()


def test_default_location_is_keyed_by_parameters() -> None:
    a, b = default_root(4, 8, 0), default_root(4, 8, 1)
    assert a != b and a.parent == b.parent and a.parent.name == "synthetic" and a.parent.parent.name == "data"


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert (
        main(["--out", str(out), "--scenes", "1", "--samples-per-scene", "1", "--seed", "2", "--jobs", "1"])
        == 0
    )
    assert "6 JPEGs" in capsys.readouterr().out and (out / "v1.0-mini" / "sample.json").is_file()
    for bad in (["--scenes", "11"], ["--samples-per-scene", "0"], ["--seed", "-4"], ["--scenes", "two"]):
        with pytest.raises(SystemExit) as exc:
            main(["--out", str(tmp_path / "bad"), *bad])
        assert exc.value.code == 2
    assert not (tmp_path / "bad").exists()
