"""Stack tier: ``--auto-resume`` probes checkpoints without running code from them, orders them by
their number (``latest.pth`` a hint only), and mmcv's own load of the chosen file accepts what the
probe accepted. ``tools/tool_hooks/checkpoint_probe.py`` of the applied checkout (what the patched
``tools/train.py`` calls), with the real torch and mmcv."""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
pytestmark = pytest.mark.stack


class RunsCode:
    """Unpickling it calls ``os.system`` (what a hostile checkpoint does)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture(scope="module")
def auto_resume():
    if not (CHECKOUT / "tools" / "tool_hooks" / "checkpoint_probe.py").is_file():
        pytest.skip("the applied StreamPETR checkout is missing (nox -s apply)")
    spec = importlib.util.spec_from_file_location(
        "checkpoint_probe", CHECKOUT / "tools" / "tool_hooks" / "checkpoint_probe.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(path: Path, **meta) -> Path:
    import torch

    torch.save({"meta": {"iter": 1, **meta}, "state_dict": {"w": torch.zeros(2)}}, path)
    return path


def _choose(auto_resume, work: Path, caplog) -> tuple[str | None, list[str]]:
    logger = logging.getLogger("probe-test")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="probe-test"):
        chosen = auto_resume.find_resumable_checkpoint(str(work), logger)
    return chosen, [r.getMessage() for r in caplog.records if r.name == "probe-test"]


def test_a_checkpoint_whose_pickle_would_run_code_is_skipped_by_name_and_nothing_runs(
    auto_resume, tmp_path, caplog
):
    import torch

    work, marker = tmp_path / "work", tmp_path / "ran"
    work.mkdir()
    _save(work / "iter_2.pth")
    torch.save({"meta": {"iter": 3, "x": RunsCode(marker)}, "state_dict": {}}, work / "iter_3.pth")
    chosen, skipped = _choose(auto_resume, work, caplog)
    assert chosen == str(work / "iter_2.pth")
    assert len(skipped) == 1 and skipped[0].startswith(f"auto-resume: skipped {work / 'iter_3.pth'}: ")
    assert "its pickle names posix.system, which loading it would call" in skipped[0]
    assert not marker.exists()
    problem = auto_resume.checkpoint_problem(str(work / "iter_3.pth"))  # what --resume-from reports
    assert "posix.system" in problem and not marker.exists()
    torch.load(work / "iter_3.pth", weights_only=False)  # the file does run code when trusted
    assert marker.exists()


def test_the_highest_number_wins_and_latest_is_a_hint(auto_resume, tmp_path, caplog):
    """A kill between the new checkpoint's rename and the latest.pth swap leaves latest.pth naming
    the older file: the newer one is taken. A latest.pth that is no numbered file (a copy) is taken
    only when no numbered file loads."""
    work = tmp_path / "work"
    work.mkdir()
    for n in (1, 2, 10):
        _save(work / f"iter_{n}.pth", iter=n)
    (work / "latest.pth").symlink_to("iter_2.pth")
    assert _choose(auto_resume, work, caplog) == (str(work / "iter_10.pth"), [])
    assert list(auto_resume.resumable_checkpoints(str(work))) == [
        str(work / f"iter_{n}.pth") for n in (10, 2, 1)
    ]  # latest.pth: the same file as iter_2.pth, listed once
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "iter_5.pth").write_bytes(b"torn")
    _save(copy / "latest.pth", iter=4)
    chosen, skipped = _choose(auto_resume, copy, caplog)
    assert chosen == str(copy / "latest.pth") and "incomplete or corrupt" in skipped[0]


def test_numpy_values_in_meta_pass_the_probe_and_mmcvs_own_load(auto_resume, tmp_path, caplog):
    """A hook may leave numpy scalars or arrays in meta: the probe allows them, and mmcv's load of
    the chosen file (torch.load's default, weights_only=True) then accepts it too."""
    import torch
    from mmcv.runner import load_checkpoint  # what runner.resume loads the chosen file with

    work = tmp_path / "work"
    work.mkdir()
    path = _save(work / "iter_1.pth", best_score=np.float64(0.5), steps=np.arange(3), n=np.int64(7))
    assert _choose(auto_resume, work, caplog) == (str(path), [])
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(torch.ones(2))
    checkpoint = load_checkpoint(model, str(path), map_location="cpu")
    assert model.w.detach().tolist() == [0.0, 0.0]
    assert checkpoint["meta"]["best_score"] == 0.5 and checkpoint["meta"]["steps"].tolist() == [0, 1, 2]


def test_the_dali_loaders_check_reads_meta_restricted(tmp_path):
    """The overlay's reader of a checkpoint's meta (the DALI loader's check and its state hook)
    refuses a pickle that would run code instead of running it."""
    import pickle

    import torch
    from dali_streampetr.runner.state_hook import checkpoint_meta

    marker = tmp_path / "ran"
    torch.save({"meta": {"x": RunsCode(marker)}, "state_dict": {}}, tmp_path / "bad.pth")
    with pytest.raises(pickle.UnpicklingError, match="posix.system"):
        checkpoint_meta(str(tmp_path / "bad.pth"))
    assert not marker.exists()
    assert checkpoint_meta(str(_save(tmp_path / "good.pth", best=np.float32(1.0)))) == {
        "iter": 1,
        "best": 1.0,
    }
