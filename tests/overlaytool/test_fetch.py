"""Pins, the local upstream cache (offline, corrupt, seeding) and the series lint."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from overlaytool import OverlayError
from overlaytool.pins import load_pin
from tooling_repos import TRAIN_PY, Project, commit_files, make_patch

GOOD_PIN = (
    'name = "StreamPETR"\nurl = "https://github.com/exiawsh/StreamPETR"\n'
    'commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"\ncheckout = "upstream/StreamPETR"\n'
)


def test_real_pins_are_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    pin = load_pin(root / "upstream" / "streampetr.toml")
    assert pin.commit == "95f64702306ccdb7a78889578b2a55b5deb35b2a" and pin.slug == "exiawsh+StreamPETR"
    mm = load_pin(root / "upstream" / "mmdetection3d.toml")
    assert (mm.commit, mm.tag) == ("47285b3f1e9dba358e98fcd12e523cfd0769c876", "v1.0.0rc6")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"', 'commit = "95f6470"', "key 'commit'"),
        ('commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"', 'commit = "main"', "key 'commit'"),
        ('url = "https://github.com/exiawsh/StreamPETR"', 'url = "github.com exiawsh"', "key 'url'"),
        ('checkout = "upstream/StreamPETR"\n', "", "key 'checkout' is missing"),
        ('checkout = "upstream/StreamPETR"', 'checkout = "../elsewhere"', "key 'checkout'"),
        ('name = "StreamPETR"', "name = [", "not valid TOML"),
        (
            'checkout = "upstream/StreamPETR"',
            'checkout = "upstream/StreamPETR"\nsource = "/a/path"',
            "key 'source'",
        ),
    ],
)
def test_malformed_pin_names_file_and_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "streampetr.toml"
    path.write_text(GOOD_PIN.replace(old, new))
    with pytest.raises(OverlayError) as err:
        load_pin(path)
    assert str(path) in str(err.value) and message in str(err.value)


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
    from tooling_repos import git

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


def lint_errors(project: Project, capsys) -> str:
    assert project.run("lint") == 1
    return capsys.readouterr().err


def test_lint_missing_file(project: Project, capsys) -> None:
    (project.patch_dir / "series").write_text("nope.patch\n")
    assert "entry 'nope.patch': file does not exist" in lint_errors(project, capsys)


def test_lint_unlisted_patch(project: Project, tmp_path: Path, capsys) -> None:
    (project.patch_dir / "stray.patch").write_text(make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "S"))
    assert "stray.patch: not listed in" in lint_errors(project, capsys)


def test_lint_duplicate_entry(project: Project, tmp_path: Path, capsys) -> None:
    project.add_patch("a.patch", make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "A"))
    with (project.patch_dir / "series").open("a") as f:
        f.write("a.patch  # again\n")
    assert "entry 'a.patch': listed twice" in lint_errors(project, capsys)


def test_lint_path_escaping_the_tree(project: Project, tmp_path: Path, capsys) -> None:
    text = make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "Escape").replace(" a/a", " a/../../etc/a")
    text = text.replace("--- a/a", "--- a/../../etc/a").replace(" b/a", " b/../../etc/a")
    project.add_patch("escape.patch", text)
    assert "file path '../../etc/a' escapes the upstream tree" in lint_errors(project, capsys)


def test_lint_series_entry_escaping(project: Project, capsys) -> None:
    (project.patch_dir / "series").write_text("../outside.patch\n")
    assert "must be a file name inside" in lint_errors(project, capsys)


def test_lint_patch_without_header(project: Project, tmp_path: Path, capsys) -> None:
    project.add_patch("bare.patch", make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "Bare", header=False))
    errors = lint_errors(project, capsys)
    assert "bare.patch: no DEP-3 'Description:'" in errors and "bare.patch: no DEP-3 'Forwarded:'" in errors


def test_lint_patch_without_subject(project: Project, tmp_path: Path, capsys) -> None:
    text = make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "Gone subject")
    project.add_patch("nosubject.patch", text.replace("Subject: [PATCH] Gone subject\n", ""))
    assert "nosubject.patch: no 'Subject:' header" in lint_errors(project, capsys)


def test_apply_runs_the_lint_first(project: Project, capsys) -> None:
    (project.patch_dir / "series").write_text("nope.patch\n")
    assert project.run("apply") == 1
    assert "The patch series is not valid" in capsys.readouterr().err
    assert not project.checkout.exists()
