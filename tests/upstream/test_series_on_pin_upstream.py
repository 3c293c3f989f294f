"""Upstream tier: the real series and overlay apply to the real pins (in a scratch project copy)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from overlaytool.__main__ import main
from overlaytool.cache import mirror_path
from overlaytool.gitcmd import git_out
from overlaytool.pins import load_pin

REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's pins, patches and overlay, applied to a fresh checkout."""
    root = tmp_path_factory.mktemp("project")
    for part in ("upstream", "patches", "overlay"):
        ignore = shutil.ignore_patterns("StreamPETR", "__pycache__", "*.pyc")
        shutil.copytree(REPO_ROOT / part, root / part, ignore=ignore)
    assert main(["--root", str(root), "apply"]) == 0
    return root


def status(checkout: Path) -> list[str]:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    return sorted(line[3:] for line in out.stdout.splitlines())


def test_series_and_overlay_apply_and_nothing_else(scratch: Path) -> None:
    from overlaytool.overlay import overlay_files
    from overlaytool.series import load_series

    patched = {fp.path for p in load_series(scratch / "patches" / "streampetr") for fp in p.files}
    expected = sorted(patched | set(overlay_files(scratch / "overlay")))
    assert status(scratch / "upstream" / "StreamPETR") == expected
    mmdet3d = scratch / "upstream" / "StreamPETR" / "mmdetection3d"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=mmdet3d, capture_output=True, text=True).stdout
    assert head.strip() == load_pin(scratch / "upstream" / "mmdetection3d.toml").commit


def test_second_apply_is_a_no_op(scratch: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["--root", str(scratch), "apply"]) == 0
    assert capsys.readouterr().out.count("up to date, nothing changed") == 2


def test_refresh_round_trip_is_byte_identical(scratch: Path) -> None:
    before = {p.relative_to(scratch): p.read_bytes() for p in (scratch / "patches").rglob("*") if p.is_file()}
    assert main(["--root", str(scratch), "refresh"]) == 0
    assert {
        p.relative_to(scratch): p.read_bytes() for p in (scratch / "patches").rglob("*") if p.is_file()
    } == before


def test_rebase_to_an_older_commit_and_back_is_lossless(scratch: Path, capsys) -> None:
    """The real series moves to an older StreamPETR commit and back; patches come back byte-identical."""
    pin_file = (scratch / "upstream" / "streampetr.toml").read_text()
    pin = load_pin(scratch / "upstream" / "streampetr.toml")
    older = git_out("rev-parse", f"{pin.commit}^", cwd=mirror_path(pin))  # the pin's parent
    before = {p.relative_to(scratch): p.read_bytes() for p in (scratch / "patches").rglob("*.patch")}
    assert main(["--root", str(scratch), "rebase", older]) == 0
    assert f'commit = "{older}"' in (scratch / "upstream" / "streampetr.toml").read_text()
    assert main(["--root", str(scratch), "rebase", pin.commit]) == 0
    out = capsys.readouterr().out
    assert "conflict" not in out
    assert {p.relative_to(scratch): p.read_bytes() for p in (scratch / "patches").rglob("*.patch")} == before
    assert (scratch / "upstream" / "streampetr.toml").read_text() == pin_file
