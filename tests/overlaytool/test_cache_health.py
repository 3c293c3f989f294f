"""The cache mirror: damage is reported with its repair, fetch repairs atomically, errors say what
failed; a pin's commit is read from the mirror, else from the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from overlaytool.cache import damage
from tooling_repos import Project, commit_files, git


def mirror_of(project: Project) -> Path:
    return project.cache / "mirrors" / "exiawsh+StreamPETR.git"


def truncate_pack(mirror: Path) -> Path:
    """Cut the mirror's pack in half (a new file: a checkout's hard links to it stay intact)."""
    (pack,) = (mirror / "objects" / "pack").glob("*.pack")
    data = pack.read_bytes()
    pack.unlink()
    pack.write_bytes(data[: len(data) // 2])
    return pack


@pytest.fixture
def damaged(project: Project) -> Project:
    assert project.run("fetch") == 0
    truncate_pack(mirror_of(project))
    return project


def test_truncated_pack_is_reported_as_damaged_with_the_repair(damaged: Project, capsys) -> None:
    assert damaged.run("apply") == 1
    err = capsys.readouterr().err
    mirror = mirror_of(damaged)
    assert f"The cached mirror of StreamPETR at {mirror} is damaged" in err
    assert "is truncated or does not match its index" in err
    assert "`nox -s fetch -- --from <a good mirror or clone>`" in err and "`nox -s fetch`" in err
    assert "does not hold the pinned commit" not in err
    assert not damaged.checkout.exists()


def test_fetch_from_a_good_clone_repairs_the_mirror(damaged: Project, tmp_path: Path) -> None:
    clone = tmp_path / "usb" / "StreamPETR"
    git(tmp_path, "clone", "-q", str(damaged.upstream), str(clone))
    assert damaged.run("fetch", "--from", str(clone)) == 0
    assert damage(mirror_of(damaged)) is None
    assert not list(mirror_of(damaged).parent.glob("*.partial-*"))
    assert damaged.run("apply") == 0


def test_plain_fetch_repairs_the_mirror_from_the_pinned_url(damaged: Project) -> None:
    assert damaged.run("fetch") == 0
    assert damage(mirror_of(damaged)) is None
    assert damaged.run("apply") == 0


@pytest.mark.parametrize("step", ["mirror exiawsh+StreamPETR:fresh", "mirror exiawsh+StreamPETR:swap"])
def test_a_repair_killed_midway_leaves_a_whole_mirror_and_the_rerun_finishes(damaged: Project, step) -> None:
    """Killed with the fresh copy made (old one still in place) or right after the swap."""
    killed = damaged.call("fetch", "--from", str(damaged.upstream), STREAMPETR_DALI_TEST_KILL_AT=step)
    assert killed.returncode == -9
    assert (mirror_of(damaged) / "HEAD").is_file()  # never a missing mirror
    assert damaged.call("fetch", "--from", str(damaged.upstream)).returncode == 0
    assert damage(mirror_of(damaged)) is None
    assert not list(mirror_of(damaged).parent.glob("*.partial-*"))
    assert damaged.run("apply") == 0


def test_fetch_from_a_missing_path_says_no_such_path(project: Project, capsys) -> None:
    assert project.run("fetch", "--from", "/nonexistent/StreamPETR") == 1
    assert "--from /nonexistent/StreamPETR: no such path." in capsys.readouterr().err


def test_fetch_from_a_directory_that_is_not_a_repository_says_so(project: Project, tmp_path, capsys) -> None:
    assert project.run("fetch", "--from", str(tmp_path)) == 1
    assert f"{tmp_path} is not a git repository" in capsys.readouterr().err


def test_rebase_target_missing_from_the_source_is_named(project: Project, tmp_path: Path, capsys) -> None:
    assert project.run("apply") == 0
    missing = "1" * 40
    assert project.run("rebase", missing, "--from", str(project.upstream)) == 1
    err = capsys.readouterr().err
    assert f"{project.upstream} does not contain commit {missing}" in err
    assert "pinned" not in err


def test_failed_target_fetch_says_the_pin_is_still_cached(project: Project, capsys) -> None:
    assert project.run("apply") == 0
    new = commit_files(project.upstream, {"docs/x.md": "x\n"}, "Docs")
    gone = "file:///nonexistent/exiawsh/StreamPETR"
    assert project.run("rebase", new, "--from", gone) == 1
    err = capsys.readouterr().err
    assert f"Could not fetch {new} from {gone} (git: " in err
    assert f"still holds the pinned commit {project.pin}; only this fetch failed" in err
    assert "does not hold the pinned commit" not in err


def test_a_damaged_mirror_cannot_be_repaired_from_a_source_without_the_pin(
    damaged: Project, tmp_path: Path, capsys
) -> None:
    other = tmp_path / "StreamPETR"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit_files(other, {"x": "y\n"}, "unrelated")
    shutil.rmtree(damaged.checkout, ignore_errors=True)
    assert damaged.run("fetch", "--from", other.as_uri()) == 1
    err = capsys.readouterr().err
    assert f"does not contain the pinned StreamPETR commit {damaged.pin}" in err
    assert damage(mirror_of(damaged)) is not None  # the old mirror was not replaced by a useless one
