"""The local upstream cache: offline with an empty cache, seeding from a clone, branch names never
trusted over the pinned commit, a corrupt cache reported with its fix."""

from __future__ import annotations

import shutil
from pathlib import Path

from tooling_repos import TRAIN_PY, Project, commit_files, git


def test_offline_with_empty_cache_names_both_ways_out(project: Project, capsys) -> None:
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(
        toml.read_text().replace(project.upstream.as_uri(), "file:///nonexistent/exiawsh/StreamPETR")
    )
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "does not hold the pinned commit" in err
    assert "`nox -s fetch`" in err and "`nox -s fetch -- --from <path-or-url>`" in err
    assert not project.checkout.exists()


def test_seeding_from_a_clone_works_offline_and_checks_the_commit(
    project: Project, tmp_path: Path, capsys
) -> None:
    clone = tmp_path / "usb-stick" / "StreamPETR"
    shutil.copytree(project.upstream, clone)
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(
        toml.read_text().replace(project.upstream.as_uri(), "file:///nonexistent/exiawsh/StreamPETR")
    )
    assert project.run("fetch", "--from", str(clone)) == 0
    assert project.run("apply") == 0
    assert (project.checkout / "tools" / "train.py").read_text() == TRAIN_PY


def test_seeding_from_a_clone_without_the_pin_is_refused(project: Project, tmp_path: Path, capsys) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit_files(other, {"x": "y\n"}, "unrelated")
    assert project.run("fetch", "--from", str(other)) == 1
    assert "holds none of the pinned commits" in capsys.readouterr().err


def test_branch_names_are_not_trusted(project: Project, capsys) -> None:
    """The pin must be an object in the cache: a moved branch in the source does not satisfy it."""
    assert project.run("fetch") == 0
    cache = Path(project.root.parent / "cache" / "mirrors" / "exiawsh+StreamPETR.git")
    assert cache.is_dir()
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.pin, "0" * 40))
    assert project.run("fetch") == 1
    assert "does not contain the pinned StreamPETR commit 0000000000000000000000000000000000000000" in (
        capsys.readouterr().err
    )


def test_corrupt_cache_is_reported_with_the_fix(project: Project, capsys) -> None:
    mirror = project.root.parent / "cache" / "mirrors" / "exiawsh+StreamPETR.git"
    mirror.mkdir(parents=True)
    (mirror / "HEAD").write_text("garbage")
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert f"{mirror} is damaged: not a git repository" in err and "--from" in err
