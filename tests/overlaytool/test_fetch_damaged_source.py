"""A `--from` source that lacks objects its commits need (a damaged clone): the fetch fails with the
check that finds them (`git -C <source> fsck --connectivity-only`), not a listing of its refs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from rebase_scenario import setup_series
from tooling_repos import Project, commit_files, git


@pytest.mark.parametrize("by", ["branch", "commit id"])
def test_a_source_missing_objects_suggests_fsck(project: Project, tmp_path: Path, by: str, capsys) -> None:
    series = setup_series(project, tmp_path)
    fork = tmp_path / "remote" / "someone" / "StreamPETR"
    git(tmp_path, "clone", "-q", str(series.upstream), str(fork))
    head = commit_files(fork, {"docs/fork.md": "the fork's notes\n"}, "Fork's own work")
    blob = git(fork, "rev-parse", "HEAD:docs/fork.md").strip()
    (fork / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # the clone lost an object
    capsys.readouterr()
    assert series.run("rebase", "main" if by == "branch" else head, "--from", str(fork)) == 1
    err = capsys.readouterr().err
    assert f"{fork} lacks objects its commits need (git: " in err
    assert f"check it with `git -C {fork} fsck --connectivity-only`" in err
    assert "ls-remote" not in err
    fsck = subprocess.run(
        ["git", "-C", str(fork), "fsck", "--connectivity-only"], capture_output=True, text=True
    )
    assert f"missing blob {blob}" in fsck.stdout + fsck.stderr  # the suggested check names what is missing
