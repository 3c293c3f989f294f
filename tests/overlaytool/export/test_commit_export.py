"""A patch's identity is its `Patch-Filename:` trailer: a retitled commit keeps its file and its place
(group label included) in the series; patches are UTF-8 whatever the locale, byte for byte."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from overlaytool.patchfile import parse_patch
from overlaytool.series import read_series
from overlaytool.targets import REPO_ROOT, load_targets
from tooling_repos import TOOL_IDENTITY, TRAIN_PY, Project, git, make_patch, patched, retitle, with_filename

SERIES = """# header line

# group 1: portability
a.patch

# group 2: integration
b.patch
"""
BASE = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}


@pytest.fixture
def grouped(project: Project, tmp_path: Path) -> Project:
    """Two patches in two labelled groups, applied and turned into commits (`edit`)."""
    project.add_patch(
        "a.patch", make_patch(tmp_path, BASE, {"tools/train.py": patched(TRAIN_PY, 5, "a")}, "A")
    )
    project.add_patch("b.patch", make_patch(tmp_path, BASE, {"README.md": "ours\n"}, "B"))
    (project.patch_dir / "series").write_text(SERIES)
    assert project.run("apply") == 0
    assert project.run("edit") == 0
    return project


def files(project: Project) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(project.patch_dir.iterdir())}


def reword_first(checkout: Path, pin: str, subject: str) -> None:
    """Retitle the first commit on the pin with `git rebase -i` (reword), as a user would."""
    env = {
        **TOOL_IDENTITY,
        "PATH": os.environ["PATH"],
        "HOME": str(checkout),
        "GIT_SEQUENCE_EDITOR": "sed -i 1s/^pick/reword/",
        "GIT_EDITOR": f"sed -i '1s/.*/{subject}/'",
    }
    subprocess.run(["git", "rebase", "-q", "-i", pin], cwd=checkout, env=env, check=True, capture_output=True)


def test_retitled_commits_keep_their_files_and_group_labels(grouped: Project) -> None:
    reword_first(grouped.checkout, grouped.pin, "A retitled")
    retitle(grouped.checkout, "B retitled")
    assert git(grouped.checkout, "log", "--format=%s", "-2").split("\n")[:2] == ["B retitled", "A retitled"]
    assert grouped.run("refresh") == 0
    assert sorted(files(grouped)) == ["a.patch", "b.patch", "series"]
    assert (grouped.patch_dir / "series").read_text() == SERIES  # each label still above its patch
    assert parse_patch(grouped.patch_dir / "a.patch").subject == "A retitled"
    assert parse_patch(grouped.patch_dir / "b.patch").subject == "B retitled"
    before = files(grouped)
    assert grouped.run("refresh") == 0
    assert files(grouped) == before


def test_a_new_commit_gets_its_trailer_and_keeps_its_name_when_retitled(grouped: Project) -> None:
    (grouped.checkout / "tools" / "train.py").write_text(patched(patched(TRAIN_PY, 5, "a"), 30, "c"))
    git(grouped.checkout, "commit", "-q", "-a", "-m", "C new concern", "-m", "Description: x\nForwarded: no")
    assert grouped.run("refresh") == 0
    assert read_series(grouped.patch_dir) == ["a.patch", "b.patch", "c-new-concern.patch"]
    assert parse_patch(grouped.patch_dir / "c-new-concern.patch").filename == "c-new-concern.patch"
    assert grouped.run("edit") == 0
    retitle(grouped.checkout, "C says what it does now")
    assert grouped.run("refresh") == 0
    assert read_series(grouped.patch_dir) == ["a.patch", "b.patch", "c-new-concern.patch"]
    assert parse_patch(grouped.patch_dir / "c-new-concern.patch").subject == "C says what it does now"


def test_a_patch_without_the_trailer_gets_it_from_the_commit_export(project: Project, tmp_path: Path) -> None:
    text = make_patch(tmp_path, BASE, {"README.md": "ours\n"}, "Readme")
    project.add_patch("readme.patch", text, trailer=False)
    assert project.run("apply") == 0
    assert project.run("refresh") == 0  # a work-tree refresh keeps the header as it is
    assert (project.patch_dir / "readme.patch").read_text() == text
    assert project.run("edit") == 0
    assert project.run("refresh") == 0
    assert (project.patch_dir / "readme.patch").read_text() == with_filename(text, "readme.patch")


def test_two_commits_naming_one_file_are_refused(grouped: Project, capsys) -> None:
    (grouped.checkout / "README.md").write_text("again\n")
    body = "Description: x\nForwarded: no\nPatch-Filename: a.patch"
    git(grouped.checkout, "commit", "-q", "-a", "-m", "Copy of A", "-m", body)
    before = files(grouped)
    assert grouped.run("refresh") == 1
    assert "Two commits export to a.patch" in capsys.readouterr().err
    assert files(grouped)["series"] == before["series"]


def test_lint_reports_a_trailer_naming_another_file(project: Project, tmp_path: Path, capsys) -> None:
    project.add_patch(
        "a.patch", with_filename(make_patch(tmp_path, {"a": "1\n"}, {"a": "2\n"}, "A"), "b.patch")
    )
    assert project.run("lint") == 1
    assert "a.patch: its 'Patch-Filename: b.patch' trailer names another file" in capsys.readouterr().err


def test_non_ascii_patches_round_trip_byte_for_byte_under_an_ascii_locale(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONIOENCODING", raising=False)
    ascii_locale = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    message = "Use DALI überall\n\nDescription: Lösung für das Gerät — naïve café\nForwarded: no"
    dali = patched(TRAIN_PY, 10, "DALI ü")
    text = make_patch(tmp_path, BASE, {"tools/train.py": dali}, message, header=False)
    assert "charset=UTF-8" in text  # git wrote it as a MIME mail with a UTF-8 body
    project.add_patch("use-dali.patch", text)
    (project.patch_dir / "series").write_text("# Gruppe: Portabilität\nuse-dali.patch\n")
    before = files(project)
    for command in ("apply", "edit", "refresh", "lint"):
        proc = project.call(command, **ascii_locale)
        assert proc.returncode == 0, proc.stderr
        assert files(project) == before, command  # commits and the series round-trip byte for byte
    assert "Use DALI überall" in project.call("apply", **ascii_locale).stdout.encode().decode(
        "unicode_escape"
    )
    (project.checkout / "tools" / "train.py").write_text(patched(dali, 30, "mehr ü"), encoding="utf-8")
    assert project.call("refresh", **ascii_locale).returncode == 0  # a work-tree edit: the header is kept
    after = (project.patch_dir / "use-dali.patch").read_bytes()
    assert after.split(b"\ndiff --git")[0] == before["use-dali.patch"].split(b"\ndiff --git")[0]
    assert "+mehr ü" in after.decode("utf-8")


def test_every_patch_of_the_repository_names_its_own_file() -> None:
    for target in load_targets(REPO_ROOT):
        for name in read_series(target.patch_dir):
            assert parse_patch(target.patch_dir / name).filename == name, target.patch_dir / name
