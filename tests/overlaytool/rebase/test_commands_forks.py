"""`rebase` onto the two fork shapes that broke it: a fork vendoring the nested mmdetection3d
checkout's tree, and a fork that moved every source (and the configs the overlay bases on) under
`src/`; and sources git cannot use (shallow clones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rebase_scenario import (
    MODEL_EDIT,
    move_everything_under_src,
    project_state,
    set_target_keys,
    setup_series,
    setup_src_fork_series,
    vendor_mmdetection3d,
)
from tooling_repos import Project, commit_files, git, tree_state


def report(project: Project) -> dict:
    return json.loads((project.root / "upstream" / "rebase-report.json").read_text())


def nested(project: Project) -> dict:
    return tree_state(project.checkout / "mmdetection3d")


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    return setup_series(project, tmp_path)


def test_a_vendored_copy_of_the_nested_checkout_is_found_before_anything_is_written(
    series: Project, capsys
) -> None:
    before, inner = project_state(series), nested(series)
    vendor_mmdetection3d(series)
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert "1 file(s) under mmdetection3d/, where the mmdetection3d target is checked out" in out
    assert "mmdetection3d/mmdet3d/__init__.py" in out and 'outside = ["mmdetection3d"]' in out
    mm_pin = git(series.mmdet3d, "rev-parse", "HEAD").strip()
    assert f"it is mmdetection3d {mm_pin} exactly" in out  # the fork vendors the pinned tree
    (overlap,) = report(series)["overlaps"]
    assert (overlap["path"], overlap["owner"], overlap["vendored_commit"]) == (
        "mmdetection3d/",
        "mmdetection3d",
        mm_pin,
    )
    assert report(series)["would_stop"]["kind"] == "overlap"
    (series.root / "upstream" / "rebase-report.json").unlink()
    (series.root / "upstream" / "rebase-report.md").unlink()

    assert series.run("rebase", "main") == 1
    assert "Nothing was written" in capsys.readouterr().err
    assert project_state(series) == before and nested(series) == inner


@pytest.mark.parametrize("stop", [False, True])
def test_keeping_the_nested_checkout_leaves_it_untouched_through_rebase_abort_apply_refresh(
    series: Project, stop: bool, capsys
) -> None:
    """The fork edited its copy: with `outside`, the nested checkout keeps its own files throughout."""
    inner = nested(series)
    vendor_mmdetection3d(series, edit=True)
    if stop:  # and the fork conflicts with model.patch: a stop, then --abort
        commit_files(series.upstream, {"pkg/model.py": MODEL_EDIT}, "Fork edits the model")
    set_target_keys(series, 'outside = ["mmdetection3d"]\n')
    assert series.run("apply") == 0
    before = project_state(series)
    capsys.readouterr()
    assert series.run("rebase", "--check", "main") == (1 if stop else 0)
    assert nested(series) == inner
    assert series.run("rebase", "main") == (1 if stop else 0)
    assert nested(series) == inner  # the fork's copy never overwrote the nested checkout
    if stop:
        assert series.run("rebase", "--abort") == 0
        assert project_state(series) == before
    assert nested(series) == inner
    assert not (series.checkout / "mmdetection3d" / "configs").exists()  # the fork's own file stays out
    assert "mmdetection3d" not in git(series.checkout, "status", "--porcelain", "--untracked-files=all")
    capsys.readouterr()
    assert series.run("apply") == 0
    capsys.readouterr()
    assert series.run("apply") == 0  # converged: the second run changes nothing, in either target
    assert capsys.readouterr().out.count(": up to date, nothing changed") == 2
    patches = {p.name: p.read_bytes() for p in series.patch_dir.glob("*.patch")}
    assert series.run("refresh") == 0
    assert "0 patch(es) rewritten" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in series.patch_dir.glob("*.patch")} == patches
    assert nested(series) == inner


def test_overlay_references_moved_under_src_stop_and_an_overlay_move_resolves_them(
    project: Project, tmp_path: Path, capsys
) -> None:
    series = setup_src_fork_series(project, tmp_path)
    new = move_everything_under_src(series)
    capsys.readouterr()
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert "use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in out
    checked = report(series)
    assert checked["would_stop"]["kind"] == "overlay-reference"
    kinds = {(r["kind"], r["file"], r["expected"], r["candidate"]) for r in checked["overlay_references"]}
    assert kinds == {
        ("_base_", "overlay/projects/configs/dali/r50_dali.py", "projects/configs/StreamPETR/r50.py",
         "src/projects/configs/StreamPETR/r50.py"),
        ("import", "src/tools/train.py", "src/tools/slurm_env.py", "tools/slurm_env.py"),
    }  # fmt: skip

    assert series.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "The overlay's references into upstream" in err
    assert "git's candidate at the target: src/projects/configs/StreamPETR/r50.py" in err
    assert 'projects = "src/projects"' in err and 'tools = "src/tools"' in err
    assert series.run("rebase", "--continue") == 1  # nothing fixed: the finish is refused the same way
    assert series.run("rebase", "--skip") == 1
    assert "not at a patch" in capsys.readouterr().err

    set_target_keys(series, '[target.overlay_moves]\nprojects = "src/projects"\ntools = "src/tools"\n')
    assert series.run("rebase", "--continue") == 1  # the patch still names the overlay config's old path
    assert "patch-path 'projects/configs/dali/r50_dali.py'" in capsys.readouterr().err
    train = series.checkout / "src" / "tools" / "train.py"
    train.write_text(train.read_text().replace("'projects/configs", "'src/projects/configs"))
    git(series.checkout, "commit", "-q", "-a", "--amend", "--no-edit")
    assert series.run("rebase", "--continue") == 0
    assert f'commit = "{new}"' in (series.root / "upstream" / "streampetr.toml").read_text()
    assert (series.checkout / "src" / "tools" / "slurm_env.py").is_file()
    assert (series.checkout / "src" / "projects" / "configs" / "dali" / "r50_dali.py").is_file()
    assert not (series.checkout / "tools").exists() and not (series.checkout / "projects").exists()
    capsys.readouterr()
    assert series.run("apply") == 0 and "up to date" in capsys.readouterr().out


def test_a_shallow_source_is_refused_before_the_fetch_by_check_and_rebase(
    series: Project, tmp_path: Path, capsys
) -> None:
    commit_files(series.upstream, {"docs/new.md": "docs\n"}, "Docs")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", series.upstream.as_uri(), str(shallow))
    before = project_state(series)
    mirror = series.cache / "mirrors" / "exiawsh+StreamPETR.git"
    (mirror / "objects" / "pack" / "tmp_pack_left").write_bytes(b"PACK half")  # a failed fetch's leftover
    for args in (["--check", "main"], ["main"]):
        assert series.run("rebase", *args, "--from", str(shallow)) == 1
        err = capsys.readouterr().err
        assert "a shallow clone (made with --depth)" in err and "Next: deepen it" in err
        assert project_state(series) == before
    assert not (mirror / "shallow").exists()
    git(shallow, "fetch", "-q", "--unshallow")
    assert series.run("rebase", "main", "--from", str(shallow)) == 0
    assert not list((mirror / "objects" / "pack").glob("tmp_*"))


def test_abort_and_finish_leave_no_refs_in_the_checkout_beyond_the_keep_ref(series: Project) -> None:
    refs = git(series.checkout, "for-each-ref", "--format=%(refname)")
    commit_files(series.upstream, {"pkg/model.py": MODEL_EDIT}, "Edit the model")
    assert series.run("rebase", "main") == 1
    assert series.run("rebase", "--abort") == 0
    assert git(series.checkout, "for-each-ref", "--format=%(refname)") == refs
    git(series.upstream, "reset", "-q", "--hard", "HEAD~1")
    new = commit_files(series.upstream, {"docs/new.md": "docs\n"}, "Docs")
    assert series.run("rebase", "main") == 0
    assert git(series.checkout, "for-each-ref", "--format=%(refname)") == refs
    mirror = series.cache / "mirrors" / "exiawsh+StreamPETR.git"
    kept = git(mirror, "for-each-ref", "--format=%(refname)", "refs/streampetr-dali/").split()
    assert f"refs/streampetr-dali/keep/{new}" in kept and all("/keep/" in r for r in kept)


def test_a_file_in_an_outside_folder_is_refused_by_apply(series: Project, capsys) -> None:
    """The series and the overlay may not write where the other target is checked out."""
    set_target_keys(series, 'outside = ["mmdetection3d"]\n')
    inner = nested(series)
    (series.root / "overlay" / "mmdetection3d").mkdir()
    (series.root / "overlay" / "mmdetection3d" / "extra.py").write_text("extra = 1\n")
    assert series.run("apply") == 1
    err = capsys.readouterr().err
    assert "mmdetection3d/extra.py is in a folder StreamPETR's checkout leaves out" in err
    assert nested(series) == inner


def test_a_state_file_of_the_older_version_is_read_and_another_shape_is_refused_by_name(
    series: Project, capsys
) -> None:
    commit_files(series.upstream, {"pkg/model.py": MODEL_EDIT}, "Edit the model")
    assert series.run("rebase", "main") == 1
    path = series.checkout / ".git" / "streampetr-dali" / "rebase.json"
    state = json.loads(path.read_text())
    old = {k: v for k, v in state.items() if k not in ("format", "given_source", "provisional", "first_stop")}
    old["stop"] = {k: state["stop"][k] for k in ("kind", "paths", "missing")}  # the older version's keys
    path.write_text(json.dumps(old))
    assert series.run("rebase", "--skip") == 0  # read as it is
    assert "model.patch: skipped" in capsys.readouterr().out


def test_an_unreadable_state_is_refused_by_name_and_abort_restores_from_the_snapshot(
    series: Project, capsys
) -> None:
    before = project_state(series)
    commit_files(series.upstream, {"pkg/model.py": MODEL_EDIT}, "Edit the model")
    assert series.run("rebase", "main") == 1
    path = series.checkout / ".git" / "streampetr-dali" / "rebase.json"
    path.write_text(json.dumps({"what": "else"}))
    capsys.readouterr()
    assert series.run("rebase", "--continue") == 1
    assert f"{path}: not a rebase state this version reads" in capsys.readouterr().err
    assert series.run("rebase", "--abort") == 0
    now = project_state(series)
    assert {**now, "cache_refs": None} == {**before, "cache_refs": None}  # the target's keep ref may stay


def test_apply_refuses_a_pin_that_vendors_the_nested_checkout_without_outside(
    series: Project, capsys
) -> None:
    inner = nested(series)
    vendor_mmdetection3d(series, edit=True)
    config = series.root / "patches" / "config.toml"
    plain = config.read_text()
    set_target_keys(series, 'outside = ["mmdetection3d"]\n')
    assert series.run("rebase", "main") == 0
    config.write_text(plain)  # the key dropped again: apply would write the fork's copy over the checkout
    capsys.readouterr()
    assert series.run("apply") == 1
    err = capsys.readouterr().err
    assert "under mmdetection3d/, where the mmdetection3d target is checked out" in err
    assert 'outside = ["mmdetection3d"]' in err
    assert nested(series) == inner
