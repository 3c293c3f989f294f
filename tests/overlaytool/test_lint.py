"""The series lint: each rule names the file and the entry, and `apply` runs it first."""

from __future__ import annotations

from pathlib import Path

from tooling_repos import Project, make_patch


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
