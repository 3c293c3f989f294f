"""`rebase` on throw-away repositories: every status, conflicts, --continue, --abort, renames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, patched

FILE = "".join(f"row {i}\n" for i in range(1, 13))
BASE = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}
EXTRA = {"other.py": FILE, "absorbed.py": FILE, "conflict.py": FILE}


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    """Pin with five files; one patch per file, each headed for a different rebase status."""
    commit_files(project.upstream, EXTRA, "more files")
    pin = git(project.upstream, "rev-parse", "HEAD").strip()
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.pin, pin))
    project.pin = pin
    base = {**BASE, **EXTRA}
    project.add_patch("readme.patch", make_patch(tmp_path, base, {"README.md": "ours\n"}, "Readme"))
    train = {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}
    project.add_patch("use-dali.patch", make_patch(tmp_path, base, train, "Use DALI"))
    project.add_patch(
        "other.patch", make_patch(tmp_path, base, {"other.py": patched(FILE, 6, "ours 6")}, "Other")
    )
    project.add_patch(
        "absorbed.patch", make_patch(tmp_path, base, {"absorbed.py": patched(FILE, 4, "fix")}, "Fix")
    )
    project.add_patch(
        "conflict.patch", make_patch(tmp_path, base, {"conflict.py": patched(FILE, 3, "ours 3")}, "Conflict")
    )
    assert project.run("apply") == 0
    return project


def upstream_moves_on(project: Project) -> str:
    commit_files(
        project.upstream,
        {
            "tools/train.py": "new 1\nnew 2\n" + TRAIN_PY,  # offset for use-dali
            "other.py": patched(FILE, 3, "theirs 3"),  # edit inside the context: needs a 3-way merge
            "absorbed.py": patched(FILE, 4, "fix"),  # upstream took our fix
            "conflict.py": patched(FILE, 3, "theirs 3"),  # same line, other text
        },
        "Upstream refactor",
    )
    return git(project.upstream, "rev-parse", "HEAD").strip()


def test_each_status_then_conflict_report_then_continue(series: Project, capsys) -> None:
    new = upstream_moves_on(series)
    assert series.run("rebase", "main", "--from", str(series.upstream)) == 1
    err = capsys.readouterr().err
    assert "conflict.patch conflicts" in err and "--continue" in err and "--abort" in err

    report = json.loads((series.root / "upstream" / "rebase-report.json").read_text())
    assert report["statuses"] == {
        "readme.patch": "clean",
        "use-dali.patch": "offset",
        "other.patch": "merged-3way",
        "absorbed.patch": "already-upstream",
        "conflict.patch": "conflict",
    }
    (detail,) = report["conflict_details"]
    assert detail["file"] == "conflict.py" and detail["hunks"] == ["@@ -1,6 +1,6 @@"]
    assert "theirs 3" in detail["conflicts"][0] and "ours 3" in detail["conflicts"][0]
    assert any("Upstream refactor" in c for c in detail["upstream_commits"])
    markdown = (series.root / "upstream" / "rebase-report.md").read_text()
    assert "| 5 | conflict.patch | conflict |" in markdown and "## Conflict in `conflict.py`" in markdown

    assert series.run("rebase", "--continue") == 1  # markers still there
    assert "Conflict markers remain in: conflict.py" in capsys.readouterr().err
    (series.checkout / "conflict.py").write_text(patched(FILE, 3, "ours and theirs 3"))
    assert series.run("rebase", "--continue") == 0
    out = capsys.readouterr().out
    assert "conflict.patch: conflict (resolved)" in out and "range-diff" in out

    assert f'commit = "{new}"' in (series.root / "upstream" / "streampetr.toml").read_text()
    names = [n for n in (series.patch_dir / "series").read_text().splitlines() if not n.startswith("#")]
    assert names == ["readme.patch", "use-dali.patch", "other.patch", "conflict.patch"]
    assert f"# base-commit: {new}" in (series.patch_dir / "series").read_text()
    assert not (series.patch_dir / "absorbed.patch").exists()
    assert series.run("apply") == 0
    assert "up to date, nothing changed" in capsys.readouterr().out
    assert (series.checkout / "conflict.py").read_text() == patched(FILE, 3, "ours and theirs 3")
    assert (series.checkout / "tools" / "train.py").read_text() == "new 1\nnew 2\n" + patched(
        TRAIN_PY, 10, "DALI"
    )


def test_abort_restores_pin_series_and_tree(series: Project, capsys) -> None:
    before = {p.name: p.read_bytes() for p in (series.patch_dir).iterdir()}
    pin_file = (series.root / "upstream" / "streampetr.toml").read_text()
    tree = (series.checkout / "tools" / "train.py").read_text()
    upstream_moves_on(series)
    assert series.run("rebase", "main", "--from", str(series.upstream)) == 1
    assert series.run("rebase", "--abort") == 0
    assert {p.name: p.read_bytes() for p in (series.patch_dir).iterdir()} == before
    assert (series.root / "upstream" / "streampetr.toml").read_text() == pin_file
    assert git(series.checkout, "rev-parse", "HEAD").strip() == series.pin
    assert (series.checkout / "tools" / "train.py").read_text() == tree
    capsys.readouterr()
    assert series.run("apply") == 0
    assert "up to date" in capsys.readouterr().out


def test_renamed_file_is_followed_by_the_three_way_merge(project: Project, tmp_path: Path, capsys) -> None:
    train = {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}
    project.add_patch("use-dali.patch", make_patch(tmp_path, BASE, train, "Use DALI"))
    assert project.run("apply") == 0
    git(project.upstream, "mv", "tools/train.py", "tools/train_net.py")
    git(project.upstream, "commit", "-q", "-m", "Rename train.py")
    assert project.run("rebase", "main", "--from", str(project.upstream)) == 0
    assert "use-dali.patch: merged-3way" in capsys.readouterr().out
    text = (project.patch_dir / "use-dali.patch").read_text()
    assert "diff --git a/tools/train_net.py b/tools/train_net.py" in text
    assert (project.checkout / "tools" / "train_net.py").read_text() == patched(TRAIN_PY, 10, "DALI")


def test_unrelated_upstream_change_keeps_patches_byte_identical(series: Project, capsys) -> None:
    before = {p.name: p.read_bytes() for p in (series.patch_dir).glob("*.patch")}
    commit_files(series.upstream, {"docs/new.md": "docs\n"}, "Docs")
    assert series.run("rebase", "main", "--from", str(series.upstream)) == 0
    out = capsys.readouterr().out
    assert out.count(": clean") == 5
    assert {p.name: p.read_bytes() for p in (series.patch_dir).glob("*.patch")} == before


def test_unknown_ref_and_second_rebase_are_refused(series: Project, capsys) -> None:
    assert series.run("rebase", "no-such-branch") == 1
    err = capsys.readouterr().err
    assert f"Could not fetch 'no-such-branch' from {series.upstream.as_uri()}" in err and "Next: " in err
    upstream_moves_on(series)
    assert series.run("rebase", "main", "--from", str(series.upstream)) == 1
    assert series.run("rebase", "main") == 1
    assert "already in progress" in capsys.readouterr().err


@pytest.mark.parametrize("form", ["path", "url"])
def test_rebase_to_a_commit_no_branch_points_at(series: Project, form: str, capsys) -> None:
    """A full commit id is fetched by id: found although no branch or tag of the source has it."""
    git(series.upstream, "checkout", "-q", "-b", "side")
    target = commit_files(series.upstream, {"docs/side.md": "side\n"}, "Side work")
    git(series.upstream, "checkout", "-q", "main")
    git(series.upstream, "branch", "-q", "-D", "side")
    assert target not in git(series.upstream, "for-each-ref", "--format=%(objectname)")
    source = str(series.upstream) if form == "path" else series.upstream.as_uri()
    assert series.run("rebase", target, "--from", source) == 0
    assert capsys.readouterr().out.count(": clean") == 5
    assert f'commit = "{target}"' in (series.root / "upstream" / "streampetr.toml").read_text()
    assert git(series.checkout, "rev-parse", "HEAD").strip() == target
    assert (series.checkout / "docs" / "side.md").read_text() == "side\n"
