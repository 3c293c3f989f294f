"""A multi-file patch whose one file the fork deleted: the report calls the cleanly merged file
merged (not a conflict), sends the user to no candidate that does not exist and prints no empty
section; `--drop-file` drops
just the deleted file's part and keeps the hunks that applied; a `--skip` of such a patch warns at
the finish that its change to a file the target still has went with it; a part dropped before the
patch was skipped whole is not listed as a part-drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, patched

FILE = "".join(f"row {i}\n" for i in range(1, 13))
GONE = "projects/apis/gpu_only.py"
BASE = {"tools/train.py": TRAIN_PY, GONE: FILE}
CPU_TRAIN = patched(TRAIN_PY, 10, "device = 'cpu'")


@pytest.fixture
def deleted(project: Project, tmp_path: Path) -> Project:
    """The pin has tools/train.py and projects/apis/gpu_only.py; one patch changes both (it makes CPU
    training work); the fork deletes gpu_only.py."""
    project.pin = commit_files(project.upstream, BASE, "two files")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    new = {"tools/train.py": CPU_TRAIN, GONE: patched(FILE, 4, "if cuda_available():")}
    project.add_patch("train-on-the-cpu.patch", make_patch(tmp_path, BASE, new, "Train on the CPU"))
    assert project.run("apply") == 0
    git(project.upstream, "rm", "-q", GONE)
    git(project.upstream, "commit", "-q", "-m", "Drop the GPU-only helper")
    return project


def test_the_report_calls_merged_files_merged_and_names_no_missing_candidate(
    deleted: Project, capsys
) -> None:
    assert deleted.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "  tools/train.py: merged cleanly" in err and "tools/train.py: conflict" not in err
    assert f"  {GONE}: missing at the target; git's best candidates: none" in err
    next_step = err[err.index("Next: ") :]
    assert "candidates listed above" not in next_step and "upstream deleted it" in next_step
    assert (
        f"`nox -s rebase -- --drop-file {GONE}` (the patch keeps its change to tools/train.py)" in next_step
    )
    report = json.loads((deleted.root / "upstream" / "rebase-report.json").read_text())
    assert [(d["file"], d["kind"]) for d in report["conflict_details"]] == [
        ("tools/train.py", "merged"), (GONE, "missing-at-target"),
    ]  # fmt: skip
    markdown = (deleted.root / "upstream" / "rebase-report.md").read_text()
    assert "## Merged cleanly `tools/train.py`" in markdown and "## Conflict in" not in markdown
    assert "resolve the conflict markers" not in markdown.lower()
    # no empty section: no commit touched train.py, and git has no candidate for the deleted file
    assert "(none)" not in markdown and "Where git thinks the code went" not in markdown
    assert "Upstream commits touching the file between the pins" not in markdown
    assert "Upstream commits touching the file (and its candidates) between the pins:\n\n- " in markdown
    assert "Drop the GPU-only helper" in markdown  # the commit that deleted it is shown


def test_drop_file_keeps_the_hunks_that_applied(deleted: Project, capsys) -> None:
    assert deleted.run("rebase", "main") == 1
    assert deleted.run("rebase", "--continue") == 1
    err = capsys.readouterr().err
    assert f"The change to {GONE} is not applied anywhere yet" in err and f"--drop-file {GONE}" in err
    assert deleted.run("rebase", "--drop-file", "tools/train.py") == 1
    assert f"not a file of train-on-the-cpu.patch missing at the target (those are: {GONE})" in (
        capsys.readouterr().err
    )
    assert deleted.run("rebase", "--continue", "--drop-file", GONE) == 0
    out = capsys.readouterr().out
    assert f"train-on-the-cpu.patch: missing-at-target (resolved) (dropped the part of {GONE})" in out
    assert f"dropped from train-on-the-cpu.patch (--drop-file): {GONE}" in out
    text = (deleted.patch_dir / "train-on-the-cpu.patch").read_text()
    assert [ln for ln in text.splitlines() if ln.startswith("diff --git")] == [
        "diff --git a/tools/train.py b/tools/train.py"
    ]
    assert (deleted.checkout / "tools" / "train.py").read_text() == CPU_TRAIN
    assert not (deleted.checkout / GONE).exists()


def test_a_skip_warns_that_the_change_to_a_file_still_there_went_with_it(deleted: Project, capsys) -> None:
    assert deleted.run("rebase", "main") == 1
    assert deleted.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert (
        "warning: --skip dropped train-on-the-cpu.patch whole, and with it its change to tools/train.py "
        "(files the target has)" in out
    )
    assert "drop just the missing file's part with --drop-file, not --skip" in out  # one was missing
    assert (deleted.checkout / "tools" / "train.py").read_text() == TRAIN_PY


def test_a_part_dropped_then_the_patch_skipped_whole_lists_no_part_drop(deleted: Project, capsys) -> None:
    """`--drop-file` recorded the missing file's part, the resolution changed nothing (upstream's
    train.py kept), the patch was skipped whole: the finish lists the skip, not a part-drop."""
    assert deleted.run("rebase", "main") == 1
    git(deleted.checkout, "checkout", "HEAD", "--", "tools/train.py")
    assert deleted.run("rebase", "--drop-file", GONE) == 1
    assert "The resolution of train-on-the-cpu.patch changes nothing" in capsys.readouterr().err
    assert deleted.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert "dropped from the series (--skip): train-on-the-cpu.patch" in out
    assert "train-on-the-cpu.patch: skipped (dropped from the series)\n" in out
    assert "(--drop-file)" not in out and "dropped the part of" not in out
    report = json.loads((deleted.root / "upstream" / "rebase-report.json").read_text())
    assert report["dropped"] == {} and report["patch_entries"][0]["dropped_files"] == []


def test_drop_file_is_offered_after_the_conflict_in_the_other_file(
    project: Project, tmp_path: Path, capsys
) -> None:
    """Issue 60: the fork deleted one file of the patch and changed the line the patch changes in the
    other; the stop offers `--drop-file` only once that conflict is resolved, which then works."""
    project.pin = commit_files(project.upstream, BASE, "two files")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    new = {"tools/train.py": CPU_TRAIN, GONE: patched(FILE, 4, "if cuda_available():")}
    project.add_patch("train-on-the-cpu.patch", make_patch(tmp_path, BASE, new, "Train on the CPU"))
    assert project.run("apply") == 0
    git(project.upstream, "rm", "-q", GONE)
    commit_files(project.upstream, {"tools/train.py": patched(TRAIN_PY, 10, "device = 'cuda:0'")}, "fork")
    assert project.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "  tools/train.py: conflict" in err
    assert (
        "resolve the conflict markers in tools/train.py (the patch's change to it), then drop just this "
        f"file's part with `nox -s rebase -- --drop-file {GONE}`" in err
    )
    assert project.run("rebase", "--continue") == 1
    assert "or resolve the conflict markers left in tools/train.py:10" in capsys.readouterr().err
    assert project.run("rebase", "--drop-file", GONE) == 1  # recorded; the markers refused by line
    assert "Conflict markers remain in: tools/train.py:10" in capsys.readouterr().err
    (project.checkout / "tools" / "train.py").write_text(CPU_TRAIN)
    assert project.run("rebase", "--continue") == 0
    out = capsys.readouterr().out
    assert f"train-on-the-cpu.patch: missing-at-target (resolved) (dropped the part of {GONE})" in out
