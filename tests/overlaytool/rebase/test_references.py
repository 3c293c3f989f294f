"""The overlay's references into a fork that moved its sources under `src/`: a config's `_base_` that
leads into the nested mmdetection3d checkout resolves against that target's pinned tree, one built
at run time is listed as unchecked (never taken as resolved), `--check` reports unresolved
references even when a patch stops first — the ones the real rebase then stops on — and an import
of the overlay's loader package resolves only where the runners put the code root on the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from overlaytool.rebase.references import UNCHECKED
from overlaytool.tree.code_root import streampetr_code_root
from rebase_scenario import (
    MODEL,
    TRAIN_SCRIPT,
    move_everything_under_src,
    move_into_src,
    set_target_keys,
    setup_series,
    vendor_mmdetection3d,
)
from tooling_repos import Project, commit_files, git, make_patch, patched

RUNTIME = "../../../../mmdetection3d/configs/_base_/default_runtime.py"  # from src/projects/configs/fork/
GONE = "../../../../mmdetection3d/configs/_base_/gone.py"
BROKEN = "../../../mmdetection3d/configs/_base_/default_runtime.py"  # from src/projects/configs/own/
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
    assert f"{UNCHECKED}:" in out
    assert "at_run_time.py: _base_ osp.join(" in out and "built from mmdet3d.__file__: at run time" in out
    assert unchecked["candidate"] == RUNTIME  # the same file in the nested checkout, from the config
    assert f"base it on the nested checkout's copy instead: {RUNTIME!r}" in unchecked["note"]

    (fork_configs.root / "overlay" / "projects" / "configs" / "fork" / "gone.py").unlink()
    assert fork_configs.run("rebase", "--check", "main") == 0
    assert report(fork_configs)["overlay_references"] == []
    assert fork_configs.run("rebase", "main") == 0
    out = capsys.readouterr().out
    assert f"warning: {UNCHECKED}:" in out
    assert "at_run_time.py: _base_ osp.join(" in out
    assert (fork_configs.checkout / "src" / "projects" / "configs" / "fork" / "runtime.py").is_file()


def test_the_targets_own_configs_an_overlay_config_builds_on_are_followed(
    fork_configs: Project, capsys
) -> None:
    """N2 (issue 50): a fork's own config that builds its `_base_` from `mmdet3d.__file__` (a path into
    site-packages, where the wheel has no configs/) and one whose relative `_base_` the move under
    `src/` broke: an overlay config building on them would not load. `--check` names both, the cause
    and the fix; a config of the fork that no overlay config builds on is not its business."""
    move_into_src(fork_configs)
    commit_files(
        fork_configs.upstream,
        {
            "src/projects/configs/own/by_file.py": AT_RUN_TIME,
            "src/projects/configs/own/broken.py": f"_base_ = ['{BROKEN}']\n",
            "src/projects/configs/own/unused.py": AT_RUN_TIME,
        },
        "The fork's own configs",
    )
    configs = fork_configs.root / "overlay" / "projects" / "configs" / "fork"
    (configs / "gone.py").unlink()
    (configs / "on_own.py").write_text("_base_ = ['../own/by_file.py', '../own/broken.py']\n")
    capsys.readouterr()
    assert fork_configs.run("rebase", "--check", "main") == 0  # the series carries over: a warning
    out = capsys.readouterr().out
    via = "(a base of overlay/projects/configs/fork/on_own.py)"
    assert (
        f"src/projects/configs/own/by_file.py: _base_ osp.join(osp.dirname(mmdet3d.__file__), "
        f"'../configs/_base_/default_runtime.py') built from mmdet3d.__file__ {via}: at run time a path "
        "into the installed mmdet3d (site-packages), and a wheel-installed mmdet3d has no configs/ there"
    ) in out
    assert f"base it on the nested checkout's copy instead: {RUNTIME!r}" in out
    assert (
        f"src/projects/configs/own/broken.py: _base_ '{BROKEN}' → "
        f"src/mmdetection3d/configs/_base_/default_runtime.py does not exist; the target's own config {via}"
    ) in out
    assert "unused.py" not in out
    files = [r["file"] for r in report(fork_configs)["unchecked_references"]]
    assert sorted(files) == [
        "overlay/projects/configs/fork/at_run_time.py",
        "src/projects/configs/own/broken.py",
        "src/projects/configs/own/by_file.py",
    ]


def test_a_base_built_through_a_variable_holding_the_package_file_gets_the_nested_path(
    fork_configs: Project, capsys
) -> None:
    """N4 (issue 60), eb45/StreamPETR_TTC_Head's shape: the fork's config stores the repository root
    in a variable first (`_mmdet = osp.dirname(osp.dirname(mmdet3d.__file__))`) and joins it in
    `_base_`: `--check` names the cause and the nested checkout's path, as for the direct shape."""
    move_into_src(fork_configs)
    through = (
        "import os.path as osp\n\nimport mmdet3d\n\n_mmdet = osp.dirname(osp.dirname(mmdet3d.__file__))\n"
        "_base_ = [osp.join(_mmdet, 'configs', '_base_', 'default_runtime.py')]\n"
    )
    commit_files(fork_configs.upstream, {"src/projects/configs/own/through.py": through}, "TTC's shape")
    configs = fork_configs.root / "overlay" / "projects" / "configs" / "fork"
    (configs / "gone.py").unlink()
    (configs / "at_run_time.py").unlink()
    (configs / "on_own.py").write_text("_base_ = ['../own/through.py']\n")
    capsys.readouterr()
    assert fork_configs.run("rebase", "--check", "main") == 0
    out = capsys.readouterr().out
    (entry,) = report(fork_configs)["unchecked_references"]
    assert entry["names"] == "osp.join(_mmdet, 'configs', '_base_', 'default_runtime.py')"  # as written
    assert entry["candidate"] == BROKEN.replace("../../../", "../../../../")  # from src/projects/configs/own/
    assert (
        "built from mmdet3d.__file__ (through _mmdet) (a base of overlay/projects/configs/fork/on_own.py)"
        in out
    )
    assert f"base it on the nested checkout's copy instead: {entry['candidate']!r}" in out


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


APIS_TEST = "".join(f"step_{i} = {i}\n" for i in range(1, 21))
PLUGIN_BASE = {
    "tools/train.py": TRAIN_SCRIPT,
    "projects/mmdet3d_plugin/__init__.py": "",
    "projects/mmdet3d_plugin/apis/__init__.py": "",
    "projects/mmdet3d_plugin/apis/test.py": APIS_TEST,
    "projects/configs/StreamPETR/r50.py": "model = dict(type='StreamPETR')\n",
}
SHARD = "from dali_streampetr.runner import scene_shard  # the overlay's loader package"
LOADER_IMPORTS = {  # file → where the loader package must be for its import of dali_streampetr
    "src/projects/mmdet3d_plugin/apis/test.py",  # a patched file of the plugin
    "overlay/tools/tool_hooks/loader_choice.py",  # a module of the overlay's hooks package
    "overlay/projects/configs/dali/sharded.py",  # a config's custom_imports
}


@pytest.fixture
def loader_fork(project: Project, tmp_path: Path) -> Project:
    """The plugin, tools and configs at upstream's root; a patch of the plugin imports the overlay's
    top-level loader package (`dali_streampetr`), as do a module of the overlay's hooks package and
    an overlay config's `custom_imports`, and the patched `tools/train.py` imports that package from
    its own folder;
    applied. Then the fork moves `projects/` and `tools/` under `src/`."""
    project.pin = commit_files(project.upstream, PLUGIN_BASE, "plugin")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    changed = {
        "projects/mmdet3d_plugin/apis/test.py": patched(APIS_TEST, 10, SHARD),
        "tools/train.py": patched(TRAIN_SCRIPT, 10, "from tool_hooks import scene_shard  # overlay hooks"),
    }
    patch = make_patch(tmp_path, PLUGIN_BASE, changed, "Shard by scenes")
    project.add_patch("shard.patch", patch)
    overlay = project.root / "overlay"
    (overlay / "dali_streampetr").mkdir()
    (overlay / "dali_streampetr" / "__init__.py").write_text("")
    (overlay / "dali_streampetr" / "runner.py").write_text(
        "from dali_streampetr import __name__ as PACKAGE  # its own package: never a reference\n\n\n"
        "def scene_shard():\n    return 0\n"
    )
    (overlay / "tools" / "tool_hooks").mkdir(parents=True)
    (overlay / "tools" / "tool_hooks" / "__init__.py").write_text("from .loader_choice import scene_shard\n")
    (overlay / "tools" / "tool_hooks" / "loader_choice.py").write_text(
        "from dali_streampetr.runner import scene_shard  # noqa: F401\n"
    )
    (overlay / "projects" / "configs" / "dali").mkdir(parents=True)
    (overlay / "projects" / "configs" / "dali" / "sharded.py").write_text(
        '_base_ = ["../StreamPETR/r50.py"]\n'
        'custom_imports = dict(imports=["dali_streampetr.runner"], allow_failed_imports=False)\n'
    )
    assert project.run("apply") == 0
    move_everything_under_src(project)
    return project


def test_the_loader_package_must_be_where_the_runners_put_the_code_root(loader_fork: Project, capsys) -> None:
    """N1: with `projects` and `tools` moved under `src/`, the runners put `src/` on the path; the
    overlay's `dali_streampetr/` left at the checkout's root is not found there. The check says so,
    and suggests every move, the loader package's included, on the console."""
    capsys.readouterr()
    assert loader_fork.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    moves = 'dali_streampetr = "src/dali_streampetr", projects = "src/projects", tools = "src/tools"'
    assert f"suggested `overlay_moves` for this target in patches/config.toml: {moves}" in out
    references = report(loader_fork)["overlay_references"]
    summary = report(loader_fork)["overlay_reference_summary"]  # what forkwatch's vet prints
    assert len(summary) == len(references) + 1
    assert summary[-1] == f"suggested `overlay_moves` (patches/config.toml): {moves}"
    imports = [r for r in references if r["names"] == "dali_streampetr"]
    assert {r["file"] for r in imports} == LOADER_IMPORTS
    assert {(r["names"], r["expected"], r["candidate"]) for r in imports} == {
        ("dali_streampetr", "src/dali_streampetr/__init__.py", "dali_streampetr/__init__.py")
    }

    # the moves of the code alone: the old check took the loader package "at the root" as resolved
    set_target_keys(loader_fork, '[target.overlay_moves]\nprojects = "src/projects"\ntools = "src/tools"\n')
    assert loader_fork.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert {r["file"] for r in report(loader_fork)["overlay_references"]} == LOADER_IMPORTS
    assert (
        "src/projects/mmdet3d_plugin/apis/test.py: import 'dali_streampetr' → "
        "src/dali_streampetr/__init__.py does not exist; the runners put src/ (the folder holding "
        "projects/) on the path; the overlay puts it at dali_streampetr/__init__.py"
    ) in out
    loader_move = 'dali_streampetr = "src/dali_streampetr"'
    assert f"overlay_moves` for this target in patches/config.toml: {loader_move}\n" in out
    assert loader_fork.run("rebase", "main") == 1
    assert f"Suggested `overlay_moves` for this target in patches/config.toml: {loader_move}" in (
        capsys.readouterr().err
    )

    config = loader_fork.root / "patches" / "config.toml"
    moved = 'tools = "src/tools"\n'
    config.write_text(config.read_text().replace(moved, f'{moved}dali_streampetr = "src/dali_streampetr"\n'))
    assert loader_fork.run("rebase", "--continue") == 0
    code = streampetr_code_root(loader_fork.root)
    assert code == loader_fork.checkout / "src"
    runner_path = {**os.environ, "PYTHONPATH": str(code)}  # what the runners set (upstream_run train)
    for module in ("projects.mmdet3d_plugin.apis.test", "dali_streampetr.runner"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=code, env=runner_path)
        assert done.returncode == 0, module
