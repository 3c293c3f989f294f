"""The targets are data (`patches/config.toml`): each one is applied, edited, refreshed and linted by
name, and a missing, misspelt or unknown target fails loudly instead of applying nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from overlaytool import OverlayError
from overlaytool.cache import mirror_path
from overlaytool.series import read_series
from overlaytool.targets import load_targets, missing_pins
from tooling_repos import CONFIG, Project, commit_files, git, make_patch, retitle, with_filename


def errors_of(project: Project, capsys, *args: str) -> str:
    capsys.readouterr()
    assert project.run(*args) == 1
    return capsys.readouterr().err


def test_the_config_lists_both_targets_in_apply_order(project: Project) -> None:
    targets = load_targets(project.root)
    assert [t.name for t in targets] == ["streampetr", "mmdetection3d"]
    assert [t.label for t in targets] == ["StreamPETR", "mmdetection3d"]
    assert targets[0].patch_dir == project.root / "patches" / "streampetr"
    assert targets[0].overlay_dir == project.root / "overlay" and targets[1].overlay_dir is None
    assert targets[1].checkout == project.checkout / "mmdetection3d"


def test_a_listed_target_without_its_series_file_is_an_error_naming_it(project: Project, capsys) -> None:
    series = project.root / "patches" / "mmdetection3d" / "series"
    series.unlink()
    for command in ("apply", "lint", "fetch"):
        assert f"{series} does not exist" in errors_of(project, capsys, command)
    assert not project.checkout.exists()


def test_a_misspelt_patch_folder_is_an_error_naming_it(project: Project, capsys) -> None:
    config = project.root / "patches" / "config.toml"
    config.write_text(CONFIG.replace('patches = "patches/streampetr"', 'patches = "patches/streampetrr"'))
    err = errors_of(project, capsys, "apply")
    assert f"the patch folder {project.root / 'patches' / 'streampetrr'} does not exist" in err
    assert "target 1 ('streampetr')" in err and not project.checkout.exists()


def test_a_folder_no_target_names_fails_the_lint(project: Project, tmp_path: Path, capsys) -> None:
    stray = project.root / "patches" / "streampeter"
    stray.mkdir()
    (stray / "series").write_text("a.patch\n")
    (project.root / "patches" / "loose.patch").write_text(
        make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "A")
    )
    err = errors_of(project, capsys, "lint")
    assert f"{stray}: no target of {project.root / 'patches' / 'config.toml'} names this folder" in err
    assert f"{project.root / 'patches' / 'loose.patch'}: outside every target's folder" in err


def test_read_series_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(OverlayError, match=f"{tmp_path / 'series'}: series file not found"):
        read_series(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.replace('name = "mmdetection3d"\n', ""), "target 2: key 'name' is missing"),
        (lambda c: c + 'colour = "red"\n', "target 2 ('mmdetection3d'): unknown key(s) colour"),
        (
            lambda c: c.replace('"upstream/mmdetection3d.toml"', '"/etc/x.toml"'),
            "key 'pin' must be a path inside",
        ),
        (lambda c: c.replace('"mmdetection3d"', '"streampetr"', 1), "two targets share the name streampetr"),
        (lambda c: "", "lists no target"),
        (lambda c: c + "[[target", "not valid TOML"),
    ],
)
def test_a_bad_config_is_an_error_naming_the_file_and_key(project: Project, change, message: str) -> None:
    config = project.root / "patches" / "config.toml"
    config.write_text(change(CONFIG))
    with pytest.raises(OverlayError, match=r"^" + str(config).replace(".", r"\.")) as caught:
        load_targets(project.root)
    assert message in str(caught.value)


def test_an_unknown_target_name_lists_the_known_ones(project: Project, capsys) -> None:
    for command in (["apply"], ["refresh"], ["lint"], ["edit"], ["rebase", "--abort"]):
        err = errors_of(project, capsys, *command, "--target", "streampert")
        assert "unknown target 'streampert': patches/config.toml lists streampetr, mmdetection3d" in err


def test_apply_of_one_target_leaves_the_other_alone(project: Project, capsys) -> None:
    assert (
        errors_of(project, capsys, "apply", "--target", "mmdetection3d").count("apply streampetr first") == 1
    )
    assert not project.checkout.exists()
    assert project.run("apply", "--target", "streampetr") == 0
    out = capsys.readouterr().out
    assert "StreamPETR" in out and "mmdetection3d" not in out
    assert not (project.checkout / "mmdetection3d").exists()
    assert project.run("apply", "--target", "mmdetection3d") == 0
    assert "mmdetection3d" in capsys.readouterr().out
    assert git(project.checkout, "status", "--porcelain", "--untracked-files=all") == ""  # nested: excluded


def test_the_second_target_is_edited_and_refreshed_by_name(project: Project, tmp_path: Path) -> None:
    mm_dir = project.root / "patches" / "mmdetection3d"
    text = make_patch(tmp_path, {"mmdet3d/__init__.py": "x = 1\n"}, {"mmdet3d/__init__.py": "x = 2\n"}, "Two")
    (mm_dir / "two.patch").write_text(with_filename(text, "two.patch"))
    (mm_dir / "series").write_text("# mmdetection3d\ntwo.patch\n")
    assert project.run("apply") == 0
    mm = project.checkout / "mmdetection3d"
    assert (mm / "mmdet3d" / "__init__.py").read_text() == "x = 2\n"
    assert project.run("edit", "--target", "mmdetection3d") == 0
    (mm / "mmdet3d" / "__init__.py").write_text("x = 3\n")
    retitle(mm, "Three", "-a")
    before = {p.name: p.read_bytes() for p in project.patch_dir.iterdir()}
    assert project.run("refresh", "--target", "mmdetection3d") == 0
    assert read_series(mm_dir) == ["two.patch"]  # its file kept: the trailer `edit` put in the commit
    exported = (mm_dir / "two.patch").read_text()
    assert "Subject: [PATCH] Three" in exported and "+x = 3" in exported
    assert "Patch-Filename: two.patch" in exported
    assert {p.name: p.read_bytes() for p in project.patch_dir.iterdir()} == before  # StreamPETR's untouched
    assert (mm / "mmdet3d" / "__init__.py").read_text() == "x = 3\n"  # re-applied as work-tree changes


def test_the_second_target_is_rebased_by_name(project: Project, tmp_path: Path, capsys) -> None:
    mm_dir = project.root / "patches" / "mmdetection3d"
    text = make_patch(tmp_path, {"mmdet3d/__init__.py": "x = 1\n"}, {"mmdet3d/__init__.py": "x = 2\n"}, "Two")
    (mm_dir / "two.patch").write_text(with_filename(text, "two.patch"))
    (mm_dir / "series").write_text("two.patch\n")
    assert project.run("apply") == 0
    newer = commit_files(project.mmdet3d, {"README.md": "docs\n"}, "Docs")
    assert "give `--target mmdetection3d` to every next" in errors_of(
        project, capsys, "rebase", "--target", "mmdetection3d", "--continue"
    )
    assert project.run("rebase", "--target", "mmdetection3d", "--check", newer) == 0
    out = capsys.readouterr().out
    assert "rebase --check mmdetection3d" in out and "two.patch: clean" in out
    streampetr_pin = (project.root / "upstream" / "streampetr.toml").read_bytes()
    assert project.run("rebase", "--target", "mmdetection3d", newer) == 0
    assert f'commit = "{newer}"' in (project.root / "upstream" / "mmdetection3d.toml").read_text()
    assert (project.root / "upstream" / "streampetr.toml").read_bytes() == streampetr_pin
    assert (mm_dir / "two.patch").read_text().count("Patch-Filename: two.patch") == 1
    assert (project.checkout / "mmdetection3d" / "README.md").read_text() == "docs\n"


def test_the_pinned_repo_is_the_mirror_else_the_checkout_holding_the_commit(project: Project) -> None:
    target = load_targets(project.root)[0]
    with pytest.raises(
        OverlayError, match=r"neither in the local upstream cache \(.*exiawsh\+StreamPETR\.git"
    ):
        target.pinned_repo()  # no fetch, no checkout
    shutil.copytree(project.upstream, project.checkout)  # a clone that holds the pinned commit
    assert target.pinned_repo() == project.checkout
    assert project.run("fetch") == 0
    assert target.pinned_repo() == mirror_path(target.pin)


def test_missing_pins_names_each_pin_the_cache_lacks_until_fetched(project: Project) -> None:
    """What `nox -s tests` and the tiers' skip rule ask: the pins the upstream cache lacks, by name."""
    assert missing_pins(project.root) == [t.pin.name for t in load_targets(project.root)]
    assert len(missing_pins(project.root)) == 2
    assert project.run("fetch") == 0
    assert missing_pins(project.root) == []
