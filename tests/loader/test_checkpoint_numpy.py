"""The numpy globals a checkpoint may name: a file written under numpy 1 (`numpy.core.multiarray`)
and one written under numpy 2 (`numpy._core.multiarray`) both load with weights_only=True."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from dali_streampetr import checkpoint_globals


def save_checkpoint(path: Path, numpy_module: bytes) -> Path:
    """A checkpoint holding numpy arrays and scalars, its pickle naming `numpy_module` as the home
    of numpy's array and scalar constructors (as the numpy that wrote it did)."""
    torch.save({"state_dict": {"w": torch.ones(2)}, "meta": {"a": np.arange(3), "s": np.float64(2.5)}}, path)
    with zipfile.ZipFile(path) as src:
        members = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as dst:
        for info, data in members:
            if info.filename.endswith("/data.pkl"):
                assert b"numpy._core.multiarray" in data  # what this numpy 2 wrote
                data = data.replace(b"numpy._core.multiarray", numpy_module)
            dst.writestr(info, data)
    return path


@pytest.mark.parametrize("numpy_module", [b"numpy.core.multiarray", b"numpy._core.multiarray"])
def test_checkpoints_of_numpy_1_and_2_load(tmp_path: Path, numpy_module: bytes) -> None:
    path = save_checkpoint(tmp_path / "iter_1.pth", numpy_module)
    with torch.serialization.safe_globals(checkpoint_globals()):
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    assert loaded["meta"]["a"].tolist() == [0, 1, 2] and loaded["meta"]["s"] == 2.5


def test_without_the_numpy_1_names_a_numpy_1_checkpoint_is_refused(tmp_path: Path) -> None:
    """What the aliases are for: numpy 2's own objects answer only to numpy 2's names."""
    path = save_checkpoint(tmp_path / "iter_1.pth", b"numpy.core.multiarray")
    only_objects = [g for g in checkpoint_globals() if not isinstance(g, tuple)]
    only_objects += [obj for obj, name in (g for g in checkpoint_globals() if isinstance(g, tuple))
                     if name.startswith("numpy._core")]  # fmt: skip
    with (
        torch.serialization.safe_globals(only_objects),
        pytest.raises(Exception, match="numpy.core.multiarray"),
    ):
        torch.load(path, map_location="cpu", weights_only=True)
