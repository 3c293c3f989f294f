"""`apply` on throw-away repositories: exactness, atomicity, idempotence, safety, overlay rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from overlaytool.targets import load_targets
from overlaytool.tree.apply import applied_files
from overlaytool.tree.stamp import read_stamp
from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, patched


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def status(project: Project) -> list[str]:
    return git(project.checkout, "status", "--porcelain", "--untracked-files=all").splitlines()


@pytest.fixture
def good_patch(tmp_path: Path) -> str:
    return make_patch(
        tmp_path, {"tools/train.py": TRAIN_PY}, {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}, "Use DALI"
    )


def test_clean_apply_yields_pin_series_and_overlay_only(project: Project, good_patch: str, capsys) -> None:
    project.add_patch("use-dali.patch", good_patch)
    (project.root / "overlay" / "dali_streampetr").mkdir()
    (project.root / "overlay" / "dali_streampetr" / "__init__.py").write_text("VERSION = 1\n")
    (project.root / "overlay" / "dali_streampetr" / "__pycache__").mkdir()
    (project.root / "overlay" / "dali_streampetr" / "__pycache__" / "x.pyc").write_bytes(b"\0")

    assert project.run("apply") == 0

    assert (project.checkout / "tools" / "train.py").read_text() == patched(TRAIN_PY, 10, "DALI")
    assert (project.checkout / "dali_streampetr" / "__init__.py").read_text() == "VERSION = 1\n"
    assert not (project.checkout / "dali_streampetr" / "__pycache__").exists()
    assert git(project.checkout, "rev-parse", "HEAD").strip() == project.pin
    assert status(project) == [" M tools/train.py", "?? dali_streampetr/__init__.py"]
    assert (project.checkout / "mmdetection3d" / "mmdet3d" / "__init__.py").exists()
    out = capsys.readouterr().out
    assert "use-dali.patch: Use DALI [tools/train.py]" in out and "overlay: 1 new file(s)" in out


def test_second_apply_is_a_no_op(project: Project, good_patch: str, capsys) -> None:
    project.add_patch("use-dali.patch", good_patch)
    (project.root / "overlay" / "dali_streampetr").mkdir()
    (project.root / "overlay" / "dali_streampetr" / "__init__.py").write_text("VERSION = 1\n")
    assert project.run("apply") == 0
    train = project.checkout / "tools" / "train.py"
    before = (train.stat().st_mtime_ns, snapshot(project.checkout))
    capsys.readouterr()
    assert project.run("apply") == 0
    out = capsys.readouterr().out
    assert "up to date, nothing changed" in out
    assert "overlay: 1 file(s) in place" in out and "new file(s)" not in out  # nothing is new (issue 60)
    assert (train.stat().st_mtime_ns, snapshot(project.checkout)) == before


def test_offset_is_refused_with_patch_file_and_hunk(project: Project, tmp_path: Path, capsys) -> None:
    shifted = "extra 1\nextra 2\n" + TRAIN_PY
    text = make_patch(
        tmp_path, {"tools/train.py": shifted}, {"tools/train.py": patched(shifted, 12, "DALI")}, "Shifted"
    )
    project.add_patch("shifted.patch", text)
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "Patch 1/1 shifted.patch" in err
    assert "file tools/train.py, hunk @@ -9,7 +9,7 @@" in err
    assert "offset" in err and "-2 lines away" in err
    assert status(project) == []


def test_changed_context_is_refused_with_both_lines(project: Project, tmp_path: Path, capsys) -> None:
    other = patched(TRAIN_PY, 9, "someone else's line 9")
    text = make_patch(
        tmp_path, {"tools/train.py": other}, {"tools/train.py": patched(other, 10, "DALI")}, "Ctx"
    )
    project.add_patch("ctx.patch", text)
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "context changed at line 9" in err
    assert 'patch expects: "someone else\'s line 9"' in err and "upstream has:  'line 9'" in err


def test_missing_file_is_named(project: Project, tmp_path: Path, capsys) -> None:
    text = make_patch(tmp_path, {"tools/gone.py": "a\n"}, {"tools/gone.py": "b\n"}, "Gone")
    project.add_patch("gone.patch", text)
    assert project.run("apply") == 1
    assert "file tools/gone.py: missing file" in capsys.readouterr().err


def test_conflicting_second_patch_leaves_the_tree_exactly_as_before(
    project: Project, tmp_path: Path, good_patch: str, capsys
) -> None:
    project.add_patch("use-dali.patch", good_patch)
    assert project.run("apply") == 0
    before = snapshot(project.checkout)
    # A second patch written against pristine upstream touches the same line: a conflict.
    conflict = make_patch(
        tmp_path, {"tools/train.py": TRAIN_PY}, {"tools/train.py": patched(TRAIN_PY, 10, "X")}, "X"
    )
    extra = make_patch(tmp_path, {"README.md": "upstream\n"}, {"README.md": "ours\n"}, "Readme")
    project.add_patch("readme.patch", extra)
    project.add_patch("conflict.patch", conflict)
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "Patch 3/3 conflict.patch" in err and "Nothing was changed" in err
    assert snapshot(project.checkout) == before


def test_local_edits_are_refused_by_name_and_discarded_only_with_force(
    project: Project, good_patch: str, capsys
) -> None:
    project.add_patch("use-dali.patch", good_patch)
    assert project.run("apply") == 0
    (project.checkout / "tools" / "train.py").write_text("my edit\n")
    (project.checkout / "README.md").write_text("mine too\n")
    capsys.readouterr()
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "local edits" in err and "README.md" in err and "tools/train.py" in err and "--force" in err
    assert (project.checkout / "tools" / "train.py").read_text() == "my edit\n"
    assert project.run("apply", "--force") == 0
    assert (project.checkout / "tools" / "train.py").read_text() == patched(TRAIN_PY, 10, "DALI")
    assert status(project) == [" M tools/train.py"]


def test_fresh_clone_by_hand_with_edits_is_not_overwritten(project: Project, good_patch: str, capsys) -> None:
    assert project.run("apply") == 0
    (project.checkout / "README.md").write_text("edited before any series\n")
    project.add_patch("use-dali.patch", good_patch)
    assert project.run("apply") == 1
    assert "README.md" in capsys.readouterr().err


def test_removed_patch_and_overlay_file_are_reverted(project: Project, good_patch: str) -> None:
    project.add_patch("use-dali.patch", good_patch)
    (project.root / "overlay" / "cfg.py").write_text("a = 1\n")
    assert project.run("apply") == 0
    (project.patch_dir / "use-dali.patch").unlink()
    (project.patch_dir / "series").write_text("")
    (project.root / "overlay" / "cfg.py").unlink()
    assert project.run("apply") == 0
    assert status(project) == []


@pytest.mark.parametrize("shadow", ["README.md", "tools/new.py"])
def test_overlay_may_not_shadow_upstream_or_patched_files(
    project: Project, tmp_path: Path, shadow, capsys
) -> None:
    project.add_patch("new.patch", make_patch(tmp_path, {}, {"tools/new.py": "new\n"}, "Add new"))
    (project.root / "overlay" / shadow).parent.mkdir(parents=True, exist_ok=True)
    (project.root / "overlay" / shadow).write_text("shadow\n")
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert f"overlay/{shadow} would shadow {shadow}" in err
    assert not (project.checkout / "tools" / "new.py").exists()


def test_untracked_file_in_overlay_path_is_not_overwritten(project: Project, capsys) -> None:
    assert project.run("apply") == 0
    (project.checkout / "cfg.py").write_text("user file\n")
    (project.root / "overlay" / "cfg.py").write_text("overlay file\n")
    assert project.run("apply") == 1
    assert "cfg.py (untracked file the overlay would overwrite)" in capsys.readouterr().err
    assert (project.checkout / "cfg.py").read_text() == "user file\n"


def test_failure_lists_upstream_commits_that_touched_the_file(
    project: Project, tmp_path: Path, capsys
) -> None:
    newer = patched(TRAIN_PY, 20, "upstream moved on")
    commit_files(project.upstream, {"tools/train.py": newer}, "Refactor training loop")
    text = make_patch(
        tmp_path, {"tools/train.py": newer}, {"tools/train.py": patched(newer, 21, "DALI")}, "New"
    )
    project.add_patch("new.patch", text)
    assert project.run("fetch", "--from", str(project.upstream)) == 0
    assert project.run("apply") == 1
    err = capsys.readouterr().err
    assert "Upstream commits touching tools/train.py since the pin:" in err
    assert "Refactor training loop" in err


def test_applied_files_name_each_checkouts_files_and_digest(project: Project, good_patch: str) -> None:
    project.add_patch("use-dali.patch", good_patch)
    applied = applied_files(load_targets(project.root))
    digest, files = applied["streampetr"]
    assert digest == read_stamp(project.checkout)["digest"] and "tools/train.py" in files
    assert files == sorted(files) and "tools/train.py" in read_stamp(project.checkout)["files"]
    assert applied_files(load_targets(project.root)) == applied  # a second call: apply is a no-op
