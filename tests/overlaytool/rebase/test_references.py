"""The overlay's references into a fork that moved its sources under `src/`: a config's `_base_` that
leads into the nested mmdetection3d checkout resolves against that target's pinned tree, one built
at run time is listed as unchecked (never taken as resolved), and `--check` reports unresolved
references even when a patch stops first — the ones the real rebase then stops on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rebase_scenario import MODEL, move_into_src, set_target_keys, setup_series, vendor_mmdetection3d
from tooling_repos import Project, commit_files, git, patched

RUNTIME = "../../../../mmdetection3d/configs/_base_/default_runtime.py"  # from src/projects/configs/fork/
GONE = "../../../../mmdetection3d/configs/_base_/gone.py"
AT_RUN_TIME = (
    "import os.path as osp\n\nimport mmdet3d\n\n"
    "_base_ = [osp.join(osp.dirname(mmdet3d.__file__), '../configs/_base_/default_runtime.py')]\n"
)


def report(project: Project) -> dict:
    return json.loads((project.root / "upstream" / "rebase-report.json").read_text())


@pytest.fixture
def fork_configs(project: Project, tmp_path: Path) -> Project:
    """The rebase scenario with mmdetection3d's runtime config pinned, overlay configs that base on
    it from where `overlay_moves` puts them (`src/projects`), one with a wrong path, one built at
    run time."""
    series = setup_series(project, tmp_path)
    mm = commit_files(
        series.mmdet3d, {"configs/_base_/default_runtime.py": "log_level = 'INFO'\n"}, "runtime"
    )
    toml = series.root / "upstream" / "mmdetection3d.toml"
    toml.write_text(toml.read_text().replace(git(series.mmdet3d, "rev-parse", "HEAD~1").strip(), mm))
    configs = series.root / "overlay" / "projects" / "configs" / "fork"
    configs.mkdir(parents=True)
    (configs / "runtime.py").write_text(f"_base_ = ['{RUNTIME}']\nlog_level = 'DEBUG'\n")
    (configs / "gone.py").write_text(f"_base_ = ['{GONE}']\n")
    (configs / "at_run_time.py").write_text(AT_RUN_TIME)
    set_target_keys(series, '[target.overlay_moves]\nprojects = "src/projects"\n')
    assert series.run("apply") == 0
    return series


def test_a_base_in_the_nested_checkout_resolves_and_one_built_at_run_time_is_unchecked(
    fork_configs: Project, capsys
) -> None:
    move_into_src(fork_configs)
    capsys.readouterr()
    assert fork_configs.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    checked = report(fork_configs)
    assert [(r["file"], r["names"], r["note"]) for r in checked["overlay_references"]] == [
        (
            "overlay/projects/configs/fork/gone.py",
            GONE,
            "not a file of mmdetection3d's pinned tree (the checkout at mmdetection3d/)",
        ),
    ]  # fmt: skip  (runtime.py's _base_ resolves: mmdetection3d's pin has the file)
    (unchecked,) = checked["unchecked_references"]
    assert unchecked["file"] == "overlay/projects/configs/fork/at_run_time.py"
    assert unchecked["names"].startswith("osp.join(osp.dirname(mmdet3d.__file__)")
    assert "overlay references not checked (built at run time):" in out
    assert "at_run_time.py: _base_ osp.join(" in out and "built at run time: not checked" in out

    (fork_configs.root / "overlay" / "projects" / "configs" / "fork" / "gone.py").unlink()
    assert fork_configs.run("rebase", "--check", "main") == 0
    assert report(fork_configs)["overlay_references"] == []
    assert fork_configs.run("rebase", "main") == 0
    out = capsys.readouterr().out
    assert "warning: overlay references not checked (built at run time):" in out
    assert "at_run_time.py: _base_ osp.join(" in out
    assert (fork_configs.checkout / "src" / "projects" / "configs" / "fork" / "runtime.py").is_file()


def test_check_reports_the_references_even_when_a_patch_stops_first(fork_configs: Project, capsys) -> None:
    move_into_src(fork_configs, edit_model=patched(MODEL, 5, "    return x + 100  # theirs"))
    capsys.readouterr()
    assert fork_configs.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    checked = report(fork_configs)
    assert (checked["would_stop"]["kind"], checked["would_stop"]["patch"]) == ("conflict", "model.patch")
    assert checked["overlay_references_checked"] is True
    assert [r["file"] for r in checked["overlay_references"]] == ["overlay/projects/configs/fork/gone.py"]
    assert "the overlay's references would not resolve (checked without model.patch):" in out
    markdown = (fork_configs.root / "upstream" / "rebase-report.md").read_text()
    assert "## Overlay references that do not resolve (checked without the stopped patch)" in markdown

    # the real rebase: the conflict first, then exactly the references the check reported
    assert fork_configs.run("rebase", "main") == 1
    model = fork_configs.checkout / "src" / "pkg" / "model.py"
    model.write_text(patched(MODEL, 5, "    return x * 100  # ours and theirs"))
    capsys.readouterr()
    assert fork_configs.run("rebase", "--continue") == 1
    err = capsys.readouterr().err
    assert "overlay/projects/configs/fork/gone.py: _base_" in err
    assert [r["file"] for r in report(fork_configs)["overlay_references"]] == [
        "overlay/projects/configs/fork/gone.py"
    ]


def test_check_says_the_references_were_not_checked_after_an_overlap(fork_configs: Project, capsys) -> None:
    vendor_mmdetection3d(fork_configs)
    capsys.readouterr()
    assert fork_configs.run("rebase", "--check", "main") == 1
    assert "overlay references: not checked (the check stops at the overlap" in capsys.readouterr().out
    checked = report(fork_configs)
    assert checked["overlay_references_checked"] is False and checked["overlay_references"] == []
    markdown = (fork_configs.root / "upstream" / "rebase-report.md").read_text()
    assert "Overlay references: not checked" in markdown
