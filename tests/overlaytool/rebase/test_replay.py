"""`rebase` onto targets that move the patched files: followed, missing-at-target, markers, staging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rebase_scenario import (
    MODEL,
    OURS_MODEL,
    move_into_src,
    patch_paths,
    project_state,
    rewrite_model,
    setup_series,
)
from tooling_repos import TRAIN_PY, Project, git, patched


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    return setup_series(project, tmp_path)


def report(project: Project) -> dict:
    return json.loads((project.root / "upstream" / "rebase-report.json").read_text())


def test_every_patched_file_moved_into_a_subdirectory(series: Project, capsys) -> None:
    move_into_src(series)
    assert series.run("rebase", "main") == 0
    out = capsys.readouterr().out
    assert "use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in out
    assert "model.patch: merged-3way (pkg/model.py → src/pkg/model.py)" in out
    assert patch_paths(series, "use-dali.patch") == ["diff --git a/src/tools/train.py b/src/tools/train.py"]
    assert patch_paths(series, "model.patch") == ["diff --git a/src/pkg/model.py b/src/pkg/model.py"]
    assert not (series.checkout / "tools" / "train.py").exists()
    assert (series.checkout / "src" / "tools" / "train.py").read_text() == patched(TRAIN_PY, 10, "DALI")
    assert (series.checkout / "src" / "pkg" / "model.py").read_text() == OURS_MODEL
    done = report(series)
    assert done["resolved"] and not done["conflict_details"]  # the report describes no open conflict
    assert series.run("apply") == 0 and "up to date" in capsys.readouterr().out


def test_a_marker_left_in_a_moved_file_is_refused_by_name_and_line(series: Project, capsys) -> None:
    move_into_src(series, edit_model=patched(MODEL, 5, "    return x + 100  # theirs"))
    assert series.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "src/pkg/model.py (moved from pkg/model.py): conflict" in err
    assert "Statuses so far:\n  use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in err
    (detail,) = report(series)["conflict_details"]
    assert detail["file"] == "src/pkg/model.py" and detail["was"] == ["pkg/model.py"]
    assert detail["hunks"] == ["@@ -2,7 +2,7 @@ def layer_1(x):"]  # not "none": the hunks of the moved file
    markdown = (series.root / "upstream" / "rebase-report.md").read_text()
    assert "Hunks of the patch: `@@ -2,7 +2,7 @@ def layer_1(x):`" in markdown

    model = series.checkout / "src" / "pkg" / "model.py"
    lines = model.read_text().splitlines()
    marker_line = next(i for i, line in enumerate(lines, 1) if line.startswith("<<<<<<< "))
    assert series.run("rebase", "--continue") == 1
    err = capsys.readouterr().err
    assert f"Conflict markers remain in: src/pkg/model.py:{marker_line}" in err
    assert "Statuses so far:\n  use-dali.patch: merged-3way" in err and "model.patch: conflict" in err

    resolved = patched(MODEL, 5, "    return x * 100  # ours and theirs")
    model.write_text(resolved)
    (series.checkout / "dali").mkdir(
        exist_ok=True
    )  # what a user's test run leaves: an overlay copy, caches, notes
    (series.checkout / "dali" / "loader.py").write_text("LOADER = 1\n")
    (series.checkout / "src" / "pkg" / "__pycache__").mkdir()
    (series.checkout / "src" / "pkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\x00\x01pyc")
    (series.checkout / "notes.txt").write_text("mine\n")
    assert series.run("rebase", "--continue") == 0
    assert "model.patch: conflict (resolved) (pkg/model.py → src/pkg/model.py)" in capsys.readouterr().out
    for name in ("use-dali.patch", "model.patch"):
        text = (series.patch_dir / name).read_text()
        assert "<<<<<<<" not in text and "pyc" not in text and "loader.py" not in text and "notes" not in text
    assert patch_paths(series, "model.patch") == ["diff --git a/src/pkg/model.py b/src/pkg/model.py"]
    assert (series.checkout / "src" / "pkg" / "model.py").read_text() == resolved


def test_a_moved_and_rewritten_file_is_missing_at_target(series: Project, capsys) -> None:
    rewrite_model(series)
    assert series.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "Patch model.patch modifies a file missing at upstream" in err
    assert "pkg/model.py: missing at the target; git's best candidates: src/pkg/model_v2.py " in err
    assert "--skip" in err and "use-dali.patch: clean" in err
    candidates, next_step = err.index("git's best candidates"), err.index("Next: ")
    assert candidates < next_step and "candidates listed above" in err[next_step:] and "below" not in err
    assert not (series.checkout / "pkg" / "model.py").exists()  # never re-created
    (detail,) = report(series)["conflict_details"]
    assert detail["kind"] == "missing-at-target" and detail["hunks"] == ["@@ -2,7 +2,7 @@ def layer_1(x):"]
    assert "+    return x * 2  # ours" in detail["hunk_text"]
    (candidate,) = detail["candidates"]
    assert candidate["path"] == "src/pkg/model_v2.py" and 0 < candidate["similarity"] < 50
    assert any("Rewrite the model" in c for c in detail["upstream_commits"])

    assert series.run("rebase", "--continue") == 1  # nothing carries the change yet
    assert "The change to pkg/model.py is not applied anywhere yet" in capsys.readouterr().err
    (series.checkout / "pkg").mkdir()
    (series.checkout / "pkg" / "model.py").write_text(OURS_MODEL)  # re-creating it is refused too
    assert series.run("rebase", "--continue") == 1
    assert "pkg/model.py is gone at the target" in capsys.readouterr().err
    (series.checkout / "pkg" / "model.py").unlink()

    assert series.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert "model.patch: skipped (dropped from the series)" in out
    assert "dropped from the series (--skip): model.patch" in out
    series_file = (series.patch_dir / "series").read_text()
    names = [n for n in series_file.splitlines() if not n.startswith("#")]
    assert names == ["use-dali.patch"] and not (series.patch_dir / "model.patch").exists()
    assert not (series.checkout / "pkg" / "model.py").exists()


def test_missing_at_target_resolved_in_the_new_file(series: Project, capsys) -> None:
    rewrite_model(series)
    assert series.run("rebase", "main") == 1
    new_file = series.checkout / "src" / "pkg" / "model_v2.py"
    new_file.write_text(new_file.read_text().replace("return x - 2", "return x * 2  # ours"))
    assert series.run("rebase", "--continue") == 0
    assert "model.patch: missing-at-target (resolved)" in capsys.readouterr().out
    assert patch_paths(series, "model.patch") == ["diff --git a/src/pkg/model_v2.py b/src/pkg/model_v2.py"]


def test_abort_after_missing_at_target_restores_everything(series: Project, capsys) -> None:
    before = project_state(series)
    rewrite_model(series)
    assert series.run("rebase", "main") == 1
    assert series.run("rebase", "--abort") == 0
    assert project_state(series) == before
    assert not list((series.root / "upstream").glob("rebase-report.*"))


def test_a_resolution_that_changes_nothing_is_refused_until_skipped(series: Project, capsys) -> None:
    """Taking upstream's side silently would drop the patch: --continue asks for --skip instead."""
    move_into_src(series, edit_model=patched(MODEL, 5, "    return x + 100  # theirs"))
    assert series.run("rebase", "main") == 1
    git(series.checkout, "checkout", "HEAD", "--", "src/pkg/model.py")  # upstream's version, no markers
    assert series.run("rebase", "--continue") == 1
    assert "The resolution of model.patch changes nothing" in capsys.readouterr().err
    assert series.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert "model.patch: skipped (dropped from the series)" in out
    assert not (series.patch_dir / "model.patch").exists()
    # the skip was the tool's advice and no file was missing: no warning, no --drop-file (issue 50)
    assert "warning: --skip dropped" not in out and "--drop-file" not in out


def test_a_conflict_skipped_warns_without_sending_to_drop_file(series: Project, capsys) -> None:
    """A conflict skipped without resolving: its change is gone from a file the target has; no file
    was missing, so `--drop-file` (which drops a missing file's part) is not offered."""
    move_into_src(series, edit_model=patched(MODEL, 5, "    return x + 100  # theirs"))
    assert series.run("rebase", "main") == 1
    capsys.readouterr()
    assert series.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert (
        "warning: --skip dropped model.patch whole, and with it its change to src/pkg/model.py (files the "
        "target has). If that change is still needed, carry it again (`nox -s edit`, then a commit)." in out
    )
    assert "--drop-file" not in out
