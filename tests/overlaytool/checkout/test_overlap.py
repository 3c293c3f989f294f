"""The overlap refusal for a fork that vendors the nested mmdetection3d checkout tells a copy that is
a pure subset of the pin (files byte-identical, some left out) from one with the fork's own edits,
and names the edited and added files: what `outside` will leave out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rebase_scenario import setup_series
from tooling_repos import Project, commit_files, git

MM = {f"mmdet3d/ops/op_{i}.py": f"OP = {i}\n" for i in range(5)} | {"tests/test_ops.py": "def test(): ...\n"}


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    """The rebase scenario with an mmdetection3d pin of seven files."""
    series = setup_series(project, tmp_path)
    mm = commit_files(series.mmdet3d, MM, "ops and tests")
    toml = series.root / "upstream" / "mmdetection3d.toml"
    toml.write_text(toml.read_text().replace(git(series.mmdet3d, "rev-parse", "HEAD~1").strip(), mm))
    assert series.run("apply") == 0
    return series


def vendor(project: Project, files: dict[str, str]) -> str:
    return commit_files(project.upstream, {f"mmdetection3d/{k}": v for k, v in files.items()}, "Vendor")


def overlap_of(project: Project) -> dict:
    return json.loads((project.root / "upstream" / "rebase-report.json").read_text())["overlaps"][0]


def test_a_pure_subset_of_the_pin_is_told_apart(series: Project, capsys) -> None:
    subset = {k: v for k, v in MM.items() if k.startswith("mmdet3d/")}  # the tests left out, none edited
    vendor(series, {"mmdet3d/__init__.py": "x = 1\n", **subset})
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    pin = git(series.mmdet3d, "rev-parse", "HEAD").strip()[:12]
    assert (
        f"the copy is a pure subset of the pin: 6 file(s) byte-identical to mmdetection3d's pin {pin}, 1 of "
        "its files left out, none edited or added; keeping the nested checkout loses nothing of it" in out
    )
    assert (
        "nothing to adopt, it is mmdetection3d's pin less 1 file(s)" in out
        and "the fork edited it" not in out
    )
    cmp = overlap_of(series)["against_pin"]
    assert (cmp["identical"], cmp["edited"], cmp["added"], cmp["left_out"]) == (6, [], [], 1)


def test_a_copy_with_edits_names_them(series: Project, capsys) -> None:
    files = {"mmdet3d/__init__.py": "x = 1\n", **MM, "mmdet3d/ops/op_2.py": "OP = 'the fork'\n"}
    vendor(series, {**files, "mmdet3d/ops/fork_op.py": "FORK = 1\n"})
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert (
        "the copy has the fork's own changes: 1 edited (mmdet3d/ops/op_2.py); 1 added "
        "(mmdet3d/ops/fork_op.py); 6 file(s) byte-identical" in out
    )
    assert "These are what `outside` leaves out: carry them as mmdetection3d patches" in out
    cmp = overlap_of(series)["against_pin"]
    assert (cmp["edited"], cmp["added"], cmp["left_out"]) == (
        ["mmdet3d/ops/op_2.py"],
        ["mmdet3d/ops/fork_op.py"],
        0,
    )
