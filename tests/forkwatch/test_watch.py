"""`python -m forkwatch watch`: per source a state and per patch a status in one summary, unreachable
sources reported, and the exit status non-zero only on a change of state."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from forkwatch.__main__ import main
from forkwatch.watch_summary import FORMAT
from rebase_scenario import project_state, rewrite_model
from tooling_repos import TRAIN_PY, Project, commit_files, git, patched
from watch_repos import fork_of


def sources_file(tmp: Path, *entries: tuple[str, str, str]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "forks.toml"
    path.write_text(
        "".join(f'[[source]]\nname = "{n}"\nurl = "{u}"\nbranch = "{b}"\n\n' for n, u, b in entries)
    )
    return path


def watch(project: Project, sources: Path, out: Path, *more: str) -> tuple[int, dict]:
    code = main(["--root", str(project.root), "watch", "--sources", str(sources), "--out", str(out), *more])
    return code, json.loads((out / "watch-summary.json").read_text())


@pytest.fixture
def sources(project: Project, tmp_path: Path) -> Path:
    """upstream (the pinned URL, one unrelated commit: carries over), a fork whose model.py is
    rewritten (stops), a path that is no repository and a fork without the branch (unreachable)."""
    commit_files(project.upstream, {"README.md": "upstream, later\n"}, "Docs")
    fork = fork_of(project, tmp_path / "forks" / "rewriter")
    project_fork = Project(project.root, fork, project.mmdet3d, project.pin, project.history)
    rewrite_model(project_fork)
    return sources_file(
        tmp_path,
        ("upstream", project.upstream.as_uri(), "main"),
        ("rewriter", str(fork), "main"),
        ("gone", str(tmp_path / "forks" / "no-such-repo"), "main"),
        ("nobranch", str(fork), "release"),
    )


def scratch_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("forkwatch-*")}


def test_each_source_gets_a_state_and_each_patch_a_status(project: Project, sources: Path, tmp_path: Path):
    before, folders = project_state(project), scratch_folders()
    code, summary = watch(project, sources, tmp_path / "out")
    assert code == 0, "the first run records the baseline"
    assert summary["format"] == FORMAT and summary["previous"] is None and summary["changed"] is False
    assert summary["pin"] == {"name": "StreamPETR", "commit": project.pin}
    by_name = {e["name"]: e for e in summary["sources"]}
    assert list(by_name) == ["upstream", "rewriter", "gone", "nobranch"]
    upstream = by_name["upstream"]
    assert upstream["state"] == "carries-over" and upstream["would_stop"] is None
    assert upstream["target_commit"] == git(project.upstream, "rev-parse", "HEAD").strip()
    assert [(p["name"], p["status"]) for p in upstream["patches"]] == [
        ("use-dali.patch", "clean"),
        ("model.patch", "clean"),
    ]
    rewriter = by_name["rewriter"]
    assert rewriter["state"] == "stops"
    assert dict((p["name"], p["status"]) for p in rewriter["patches"])["model.patch"] == "missing-at-target"
    assert rewriter["would_stop"]["kind"] == "missing-at-target"
    assert rewriter["would_stop"]["patch"] == "model.patch"
    assert len(rewriter["target_commit"]) == 40
    for name, why in (("gone", "cannot reach"), ("nobranch", "has no branch release")):
        assert by_name[name]["state"] == "unreachable" and why in by_name[name]["message"]
        assert by_name[name]["patches"] == [] and by_name[name]["would_stop"] is None
    for entry in summary["sources"]:
        assert {"name", "url", "branch", "state", "target_commit", "patches", "would_stop", "vet"} <= set(
            entry
        )
        assert entry["vet"] is None, "no vetting without --train"
    markdown = (tmp_path / "out" / "watch-summary.md").read_text()
    assert "| rewriter | main |" in markdown and "missing-at-target in model.patch" in markdown
    assert "baseline" in markdown
    assert project_state(project) == before, "the watch never writes the project, its checkout or cache"
    assert scratch_folders() == folders, "the throw-away copies are removed"


def test_exit_status_is_non_zero_only_on_a_change_of_state(project: Project, sources: Path, tmp_path: Path):
    out = tmp_path / "out"
    assert watch(project, sources, out)[0] == 0  # baseline
    code, summary = watch(project, sources, out)
    assert (
        code == 0 and summary["changed"] is False and summary["previous"] == str(out / "watch-summary.json")
    )
    commit_files(project.upstream, {"NOTES.md": "unrelated\n"}, "Notes")  # a new commit, same state
    assert watch(project, sources, out)[0] == 0
    commit_files(project.upstream, {"tools/train.py": patched(TRAIN_PY, 10, "upstream's own line")}, "Edit")
    code, summary = watch(project, sources, out)
    assert code == 1
    assert summary["changed"] is True
    assert summary["changes"] == ["upstream: carries-over → stops"]
    assert "Changed since the previous summary" in (out / "watch-summary.md").read_text()
    assert watch(project, sources, out)[0] == 0, "the new state is the one compared with next time"


def test_an_explicit_previous_summary_and_a_removed_source(project: Project, sources: Path, tmp_path: Path):
    watch(project, sources, tmp_path / "first")
    fewer = sources_file(tmp_path / "fewer", ("upstream", project.upstream.as_uri(), "main"))
    code, summary = watch(
        project, fewer, tmp_path / "second", "--previous", str(tmp_path / "first" / "watch-summary.json")
    )
    assert code == 1
    assert sorted(summary["changes"]) == [
        "gone: no longer watched",
        "nobranch: no longer watched",
        "rewriter: no longer watched",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[source]]\nname = 'a'\nurl = 'u'\n", "source 1: lacks branch"),
        ("[[source]]\nname = 'a b'\nurl = 'u'\nbranch = 'main'\n", "is not a plain word"),
        ("[[source]]\nname = 'a'\nurl = 'u'\nbranch = 'main'\nref = 'x'\n", "unknown key(s) ref"),
        ("[[source]]\nname = 'a'\nurl = 'u'\nbranch = '--upload-pack=x'\n", "starts with '-'"),
        ("name = 'a'\n", "needs at least one [[source]]"),
        ("[[source]\n", "not valid TOML"),
    ],
)
def test_a_bad_sources_file_is_refused_by_name(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture, text: str, message: str
):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    assert (
        main(["--root", str(project.root), "watch", "--sources", str(bad), "--out", str(tmp_path / "o")]) == 2
    )
    err = capsys.readouterr().err
    assert str(bad) in err and message in err


def test_a_damaged_previous_summary_is_refused_by_name(
    project: Project, sources: Path, tmp_path: Path, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    (out / "watch-summary.json").write_text('{"format": "something else", "sources": []}')
    assert main(["--root", str(project.root), "watch", "--sources", str(sources), "--out", str(out)]) == 2
    assert "not a watch summary" in capsys.readouterr().err


def test_train_vets_only_the_sources_that_carry_over(project: Project, sources: Path, tmp_path: Path):
    """With --train the carrying source gets its vetting steps (here the configs step fails: the small
    project's overlay has none; the stack tier vets the real one), the others none."""
    more = ["--train", "--python", sys.executable, "--data-root", str(tmp_path)]
    code, summary = watch(project, sources, tmp_path / "out", *more)
    assert code == 0 and summary["trained"] is True
    by_name = {e["name"]: e for e in summary["sources"]}
    vet = by_name["upstream"]["vet"]
    assert [(s["step"], s["ok"]) for s in vet["steps"]] == [
        ("rebase", True),
        ("apply", True),
        ("apply-converges", True),
        ("configs", False),
        ("train", None),
    ]
    assert vet["ok"] is False
    assert all(by_name[n]["vet"] is None for n in ("rewriter", "gone", "nobranch"))
    assert "| configs | FAIL |" in (tmp_path / "out" / "watch-summary.md").read_text()
    assert watch(project, sources, tmp_path / "out", *more)[0] == 0
