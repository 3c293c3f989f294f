"""Stack tier: `forkwatch vet` on the real pinned StreamPETR, rebased onto a fork that is the pin plus
one unrelated commit: every step passes (rebase, apply, apply converges, every overlay config loads,
one DALI training iteration), and this checkout, its pins, patches and the cache are left as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from overlaytool.cache import cache_root
from overlaytool.targets import load_targets

pytestmark = [pytest.mark.stack, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def project_state() -> dict:
    """What the vetting must never write: pins, series, the checkout, every cache mirror's refs."""
    checkout = load_targets(ROOT)[0].checkout
    return {
        "pins": {p.name: p.read_bytes() for p in (ROOT / "upstream").glob("*.toml")},
        "patches": {
            str(p.relative_to(ROOT)): p.read_bytes() for p in (ROOT / "patches").rglob("*") if p.is_file()
        },
        "head": git(checkout, "rev-parse", "HEAD"),
        "status": git(checkout, "status", "--porcelain", "--untracked-files=no"),
        "reports": sorted(p.name for p in (ROOT / "upstream").glob("rebase-report.*")),
        "cache_refs": {
            m.name: git(m, "for-each-ref", "--format=%(refname) %(objectname)")
            for m in sorted((cache_root() / "mirrors").glob("*.git"))
        },
    }


def fork_of_the_pin(tmp: Path, change: Callable[[Path], None]) -> tuple[Path, str]:
    """A local fork: the pinned commit plus one commit made by `change(fork)`; its path and commit."""
    pin = load_targets(ROOT)[0].pin
    fork = tmp / "fork"
    mirror = cache_root() / "mirrors" / f"{pin.slug}.git"
    git(tmp, "clone", "-q", "--shared", "--no-checkout", str(mirror), str(fork))
    git(fork, "checkout", "-q", "-b", "main", pin.commit)
    change(fork)
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", "The fork's change")
    return fork, git(fork, "rev-parse", "HEAD").strip()


def vet(tmp: Path, fork: Path, commit: str, data_root: Path) -> tuple[int, str]:
    """`python -m forkwatch vet <commit> --from <fork>` on this checkout; exit status and output."""
    scratch = tmp / "scratch"
    scratch.mkdir()
    cmd = [
        sys.executable, "-m", "forkwatch", "vet", commit, "--from", str(fork), "--scratch", str(scratch),
        "--python", sys.executable, "--data-root", str(data_root), "--config", "small",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400)
    assert list(scratch.iterdir()) == [], "the throw-away copy is removed"
    return done.returncode, done.stdout + done.stderr


def test_a_fork_one_unrelated_commit_ahead_is_vetted_end_to_end(tmp_path: Path, synthetic_dataset: Path):
    def notes(fork: Path) -> None:
        (fork / "FORK_NOTES.md").write_text("A fork's own notes, touching nothing the series patches.\n")

    fork, commit = fork_of_the_pin(tmp_path, notes)
    before = project_state()
    code, out = vet(tmp_path, fork, commit, synthetic_dataset)
    assert code == 0, out[-6000:]
    for step in ("rebase", "apply", "apply-converges", "configs", "train"):
        assert f"  {step:16s} pass" in out, out[-4000:]
    assert f"series moved to {commit[:12]}" in out
    configs = len(list((ROOT / "overlay" / "projects" / "configs").rglob("*.py")))
    assert f"all {configs} overlay configs load" in out
    assert project_state() == before, "the checkout, pins, patches and cache refs are left as they were"


def test_a_fork_that_moves_the_config_the_overlay_bases_on_fails_before_training(
    tmp_path: Path, synthetic_dataset: Path
):
    """The overlay's configs name `../StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py`; a fork
    that renames it fails the vetting (at the rebase's overlay check, or at the config loads)."""
    base = "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py"

    def rename(fork: Path) -> None:
        git(fork, "mv", base, base.replace("r50_flash", "r50_flash_renamed"))

    fork, commit = fork_of_the_pin(tmp_path, rename)
    before = project_state()
    code, out = vet(tmp_path, fork, commit, synthetic_dataset)
    assert code == 1, out[-6000:]
    failed = [s for s in ("rebase", "configs") if f"  {s:16s} FAIL" in out]
    assert failed, out[-4000:]
    assert "stream_petr_r50_flash_704_bs2_seq_24e.py" in out
    assert f"  {'train':16s} skip  skipped: {failed[0]} failed" in out
    assert project_state() == before


def test_a_config_based_on_the_installed_mmdet3d_is_named_with_its_cause_and_fix(tmp_path: Path):
    """N2 (issue 50): a `_base_` built from `mmdet3d.__file__` points into site-packages, where the
    wheel-installed mmdet3d has no configs/: the vetting's config load fails there, and its detail
    names the cause and the fix (a hint only for that shape: a plain missing file gets none)."""
    from forkwatch.vet import CONFIG_LOAD, config_error_hint

    by_file = tmp_path / "by_file.py"
    by_file.write_text(
        "import os.path as osp\n\nimport mmdet3d\n\n"
        "_base_ = [osp.join(osp.dirname(mmdet3d.__file__), '../configs/_base_/default_runtime.py')]\n"
    )
    missing = tmp_path / "missing.py"
    missing.write_text("_base_ = ['./not_there.py']\n")
    done = subprocess.run(
        [sys.executable, "-c", CONFIG_LOAD, str(by_file), str(missing)], capture_output=True, text=True
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["ok"] for r in results] == [False, False], done.stdout + done.stderr
    assert "site-packages/configs/_base_/default_runtime.py" in results[0]["error"]
    hint = config_error_hint(results[0]["error"])
    assert hint is not None and "the wheel installed there has no configs/" in hint
    assert "base it on the nested checkout's mmdetection3d/configs/" in hint
    assert config_error_hint(results[1]["error"]) is None
