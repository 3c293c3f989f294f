"""Stack tier: `forkwatch vet` on the real pinned StreamPETR, rebased onto a fork that is the pin plus
one unrelated commit: every step passes (rebase, apply, apply converges, every overlay config loads,
one DALI training iteration), and this checkout, its pins, patches and the cache are left as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_a_fork_one_unrelated_commit_ahead_is_vetted_end_to_end(tmp_path: Path, synthetic_dataset: Path):
    pin = load_targets(ROOT)[0].pin
    fork = tmp_path / "fork"
    git(
        tmp_path,
        "clone",
        "-q",
        "--shared",
        "--no-checkout",
        str(cache_root() / "mirrors" / f"{pin.slug}.git"),
        str(fork),
    )
    git(fork, "checkout", "-q", "-b", "main", pin.commit)
    (fork / "FORK_NOTES.md").write_text("A fork's own notes, touching nothing the series patches.\n")
    git(fork, "add", "FORK_NOTES.md")
    git(fork, "commit", "-q", "-m", "Notes of the fork")
    commit = git(fork, "rev-parse", "HEAD").strip()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = project_state()
    cmd = [
        sys.executable, "-m", "forkwatch", "vet", commit, "--from", str(fork), "--scratch", str(scratch),
        "--python", sys.executable, "--data-root", str(synthetic_dataset), "--config", "small",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    for step in ("rebase", "apply", "apply-converges", "configs", "train"):
        assert f"  {step:16s} pass" in out, out[-4000:]
    assert f"series moved to {commit[:12]}" in out
    configs = len(list((ROOT / "overlay" / "projects" / "configs").rglob("*.py")))
    assert f"all {configs} overlay configs load" in out
    assert project_state() == before, "the checkout, pins, patches and cache refs are left as they were"
    assert list(scratch.iterdir()) == [], "the throw-away copy is removed"
