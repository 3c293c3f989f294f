"""`refresh` and `edit`: byte-stable export of checkout changes back to patches/."""

from __future__ import annotations

from pathlib import Path

import pytest
from tooling_repos import TRAIN_PY, Project, git, make_patch, patched, with_filename

SUBJECT = "Use DALI"


@pytest.fixture
def applied(project: Project, tmp_path: Path) -> Project:
    base = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}
    project.add_patch(
        "use-dali.patch",
        make_patch(tmp_path, base, {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}, SUBJECT),
    )
    project.add_patch("readme.patch", make_patch(tmp_path, base, {"README.md": "ours\n"}, "Readme"))
    (project.root / "overlay" / "cfg.py").write_text("a = 1\n")
    assert project.run("apply") == 0
    return project


def patch_files(project: Project) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((project.patch_dir).iterdir())}


def test_round_trip_leaves_patches_byte_identical(applied: Project) -> None:
    before = patch_files(applied)
    assert applied.run("refresh") == 0
    assert patch_files(applied) == before


def test_work_tree_edit_goes_into_its_patch_as_format_patch_would_write_it(
    applied: Project, tmp_path: Path
) -> None:
    both = patched(patched(TRAIN_PY, 10, "DALI"), 30, "more DALI")
    (applied.checkout / "tools" / "train.py").write_text(both)
    readme_before = (applied.patch_dir / "readme.patch").read_bytes()
    assert applied.run("refresh") == 0
    expected = make_patch(tmp_path, {"tools/train.py": TRAIN_PY}, {"tools/train.py": both}, SUBJECT)
    assert (applied.patch_dir / "use-dali.patch").read_text() == with_filename(expected, "use-dali.patch")
    assert (applied.patch_dir / "readme.patch").read_bytes() == readme_before
    before = patch_files(applied)
    assert applied.run("apply") == 0  # up to date: refresh re-stamped the tree
    assert applied.run("refresh") == 0
    assert patch_files(applied) == before


def test_overlay_edits_go_back_to_overlay_not_into_a_patch(applied: Project) -> None:
    (applied.checkout / "cfg.py").write_text("a = 2\n")
    before = patch_files(applied)
    assert applied.run("refresh") == 0
    assert (applied.root / "overlay" / "cfg.py").read_text() == "a = 2\n"
    assert patch_files(applied) == before


def test_an_overlay_edit_made_in_overlay_is_kept_by_refresh(applied: Project) -> None:
    """Edited in overlay/ after apply, the checkout holds the stale copy: refresh must not copy it back."""
    (applied.root / "overlay" / "cfg.py").write_text("a = 3\n")
    assert applied.run("refresh") == 0
    assert (applied.root / "overlay" / "cfg.py").read_text() == "a = 3\n"
    assert applied.run("apply") == 0
    assert (applied.checkout / "cfg.py").read_text() == "a = 3\n"


def test_an_overlay_file_edited_on_both_sides_is_refused_and_both_kept(applied: Project, capsys) -> None:
    (applied.root / "overlay" / "cfg.py").write_text("a = 3\n")
    (applied.checkout / "cfg.py").write_text("a = 4\n")
    assert applied.run("refresh") == 1
    assert "edited both in overlay/ and in" in capsys.readouterr().err
    assert (applied.root / "overlay" / "cfg.py").read_text() == "a = 3\n"
    assert (applied.checkout / "cfg.py").read_text() == "a = 4\n"


def test_change_to_a_file_no_patch_owns_is_refused(applied: Project, capsys) -> None:
    (applied.checkout / "tools" / "other.py").write_text("new\n")
    git(applied.checkout, "add", "-N", "tools/other.py")
    assert applied.run("refresh") == 1
    assert "belong to no patch: tools/other.py" in capsys.readouterr().err


def test_edit_then_amend_then_refresh(applied: Project, tmp_path: Path, capsys) -> None:
    before = patch_files(applied)
    assert applied.run("edit") == 0
    assert git(applied.checkout, "log", "--format=%s", "-2").split("\n")[:2] == ["Readme", SUBJECT]
    assert applied.run("refresh") == 0
    assert patch_files(applied) == before  # commits round-trip byte for byte too

    assert applied.run("edit") == 0
    (applied.checkout / "README.md").write_text("ours, amended\n")
    git(applied.checkout, "commit", "-q", "-a", "--amend", "--no-edit")
    assert applied.run("refresh") == 0
    base = {"README.md": "upstream\n"}
    expected = make_patch(tmp_path, base, {"README.md": "ours, amended\n"}, "Readme")
    assert (applied.patch_dir / "readme.patch").read_text() == with_filename(expected, "readme.patch")
    assert (applied.patch_dir / "use-dali.patch").read_bytes() == before["use-dali.patch"]
    assert (applied.patch_dir / "series").read_text().splitlines()[-2:] == [
        "use-dali.patch",
        "readme.patch",
    ]
    assert git(applied.checkout, "rev-parse", "HEAD").strip() == applied.pin
    assert (applied.checkout / "README.md").read_text() == "ours, amended\n"


def test_file_shared_by_two_patches_round_trips_and_refuses_a_work_tree_edit(
    project: Project, tmp_path: Path, capsys
) -> None:
    first = patched(TRAIN_PY, 5, "first")
    project.add_patch(
        "a.patch", make_patch(tmp_path, {"tools/train.py": TRAIN_PY}, {"tools/train.py": first}, "A")
    )
    both = patched(first, 30, "second")
    project.add_patch(
        "b.patch", make_patch(tmp_path, {"tools/train.py": first}, {"tools/train.py": both}, "B")
    )
    assert project.run("apply") == 0
    before = patch_files(project)
    assert project.run("refresh") == 0
    assert patch_files(project) == before
    (project.checkout / "tools" / "train.py").write_text(patched(both, 20, "mine"))
    assert project.run("refresh") == 1
    assert "tools/train.py is touched by a.patch, b.patch" in capsys.readouterr().err
