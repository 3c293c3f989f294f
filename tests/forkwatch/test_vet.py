"""`forkwatch vet` on the small project: every step in a throw-away copy, the project, its checkout
and its cache never written, the copy removed. The config and training steps need the OpenMMLab
env: the stack tier runs them on the real pin (test_vet_stack.py); here they fail or are skipped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from forkwatch.vet import STEPS, VetSettings, passed, vet
from overlaytool.cache import cache_root
from rebase_scenario import project_state, rewrite_model
from tooling_repos import Project, commit_files
from watch_repos import fork_of


def settings(tmp: Path) -> VetSettings:
    return VetSettings(Path(sys.executable), tmp / "no-data")


def test_a_candidate_that_stops_fails_at_the_rebase_and_changes_nothing(project: Project, tmp_path: Path):
    fork = fork_of(project, tmp_path / "forks" / "rewriter")
    commit = rewrite_model(Project(project.root, fork, project.mmdet3d, project.pin, project.history))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = project_state(project)
    steps = vet(project.root, commit, str(fork), settings(tmp_path), cache_root(), scratch)
    assert [s.step for s in steps] == list(STEPS)
    assert steps[0].ok is False and "model.patch" in steps[0].detail and "missing" in steps[0].detail
    assert all(s.ok is None and s.detail == "skipped: rebase failed" for s in steps[1:])
    assert not passed(steps)
    assert project_state(project) == before
    assert list(scratch.iterdir()) == [], "the throw-away copy and its cache are removed"


def test_a_clean_candidate_is_rebased_and_applied_in_the_copy_only(project: Project, tmp_path: Path):
    commit = commit_files(project.upstream, {"README.md": "upstream, later\n"}, "Docs")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = project_state(project)
    steps = {s.step: s for s in vet(project.root, commit, None, settings(tmp_path), cache_root(), scratch)}
    assert steps["rebase"].ok and steps["rebase"].detail == f"series moved to {commit[:12]}"
    assert steps["apply"].ok and steps["apply"].detail == "applied (2 target(s))"
    assert steps["apply-converges"].ok
    assert steps["configs"].ok is False, "this project's overlay has no configs to load"
    assert "no config under projects/configs" in steps["configs"].detail
    assert steps["train"].ok is None
    assert project_state(project) == before, "pin, patches, checkout and cache refs as they were"
    assert list(scratch.iterdir()) == []


def test_the_rebase_steps_detail_names_the_stop_and_the_references_from_the_report(tmp_path: Path):
    """The rebase's output ends with the patch statuses; the stop (and the overlay files and what they
    name, with the moves that resolve them) come from its report, or the detail would not say which
    file broke."""
    from forkwatch.vet import stop_lines
    from overlaytool.rebase.references import reference_summary

    assert stop_lines(tmp_path) == []  # no report: the output's tail is all there is
    report = tmp_path / "upstream" / "rebase-report.json"
    report.parent.mkdir()
    report.write_text("{not json")
    assert stop_lines(tmp_path) == []
    loader = {
        "file": "src/projects/mmdet3d_plugin/core/apis/test.py", "kind": "import", "names": "dali_streampetr",
        "expected": "src/dali_streampetr/__init__.py", "candidate": "dali_streampetr/__init__.py", "note": "",
    }  # fmt: skip
    stop = {
        "kind": "overlay-reference",
        "patch": None,
        "paths": [],
        "message": "1 overlay reference(s) do not resolve",
    }
    summary = reference_summary([loader])  # as the rebase writes it (test_references.py of overlaytool)
    report.write_text(json.dumps({"would_stop": stop, "overlay_reference_summary": summary}))
    assert stop_lines(tmp_path) == [
        "stop: overlay-reference: 1 overlay reference(s) do not resolve",
        *summary,
    ]
    assert summary[0].startswith("src/projects/mmdet3d_plugin/core/apis/test.py: import 'dali_streampetr'")
    # the move that makes the runners find the loader package, not only in the report file
    assert (
        summary[-1]
        == 'suggested `overlay_moves` (patches/config.toml): dali_streampetr = "src/dali_streampetr"'
    )


def test_the_config_step_finds_the_overlay_configs_where_overlay_moves_put_them(project: Project) -> None:
    """A fork with its sources under `src/`: the overlay's configs land in `src/projects/configs`."""
    from forkwatch.vet import config_files
    from rebase_scenario import set_target_keys

    configs = project.root / "overlay" / "projects" / "configs" / "dali"
    configs.mkdir(parents=True)
    (configs / "r50_dali.py").write_text("use_dali_pipeline = True\n")
    (configs / "notes.md").write_text("not a config\n")
    assert config_files(project.root) == ["projects/configs/dali/r50_dali.py"]
    set_target_keys(project, '[target.overlay_moves]\nprojects = "src/projects"\n')
    assert config_files(project.root) == ["src/projects/configs/dali/r50_dali.py"]
