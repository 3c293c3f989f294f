"""Stack tier: `upstream_run train` reads whether a config trains epoch-based (a DALI run of one
needs a process group, so it starts under torchrun) from the applied checkout's configs with mmcv,
torch kept out; a config that imports torch itself is read again with it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from upstream_run import train
from upstream_run.train import CONFIGS, epoch_based

pytestmark = pytest.mark.stack
ARGS = argparse.Namespace(python=Path(sys.executable))  # the stack tier runs in the OpenMMLab env


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:  # the code of each (real) read epoch_based runs
    codes: list[str] = []
    run = subprocess.run
    monkeypatch.setattr(train.subprocess, "run", lambda cmd, **kw: codes.append(cmd[2]) or run(cmd, **kw))
    return codes


@pytest.mark.parametrize(("name", "expected"), [("small", False), ("8key", True)])
def test_the_dali_configs_are_read_without_torch(name: str, expected: bool, reads: list[str]) -> None:
    assert epoch_based(ARGS, CONFIGS["dali"][name]) is expected
    assert reads == [train._WITHOUT_TORCH + train._EPOCH_BASED]  # the first read, torch kept out, answered


def test_a_config_that_imports_torch_is_read_with_it(tmp_path: Path, reads: list[str]) -> None:
    config = tmp_path / "needs_torch.py"
    config.write_text("import torch\n\ndata = dict(train=dict(seq_mode=torch.tensor(1).item() == 2))\n")
    assert epoch_based(ARGS, str(config)) is True
    assert reads == [train._WITHOUT_TORCH + train._EPOCH_BASED, train._EPOCH_BASED]
    config.write_text("data = dict(train=dict(seq_mode=undefined_name))\n")
    with pytest.raises(SystemExit, match=f"cannot read {config}: (?s:.*)undefined_name"):
        epoch_based(ARGS, str(config))
