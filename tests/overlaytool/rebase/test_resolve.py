"""What a rebase does to the shared cache and the pin: forks, branch names, keep refs, `--check`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from overlaytool.pins import load_pin
from rebase_scenario import MODEL, move_into_src, project_state, setup_series
from tooling_repos import Project, commit_files, git, patched


@pytest.fixture
def series(project: Project, tmp_path: Path) -> Project:
    return setup_series(project, tmp_path)


def fork_of(project: Project, tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A clone of upstream with its own `main` (one commit writing `files`), a branch and a tag."""
    fork = tmp_path / "remote" / "someone" / "StreamPETR"
    git(tmp_path, "clone", "-q", str(project.upstream), str(fork))
    head = commit_files(fork, files, "Fork's own work")
    git(fork, "branch", "experimental")
    git(fork, "tag", "v9")
    return fork, head


def cache_refs(project: Project, pattern: str = "") -> str:
    mirror = project.cache / "mirrors" / "exiawsh+StreamPETR.git"
    return git(mirror, "for-each-ref", "--format=%(refname) %(objectname)", *([pattern] if pattern else []))


def test_a_fork_with_its_own_main_leaves_the_cache_branches_as_they_were(
    series: Project, tmp_path: Path, capsys
) -> None:
    fork, head = fork_of(series, tmp_path, {"docs/fork.md": "fork\n"})
    branches = cache_refs(series, "refs/heads") + cache_refs(series, "refs/tags")
    assert series.run("rebase", "main", "--from", fork.as_uri()) == 0
    assert cache_refs(series, "refs/heads") + cache_refs(series, "refs/tags") == branches
    assert f"refs/streampetr-dali/keep/{head} {head}" in cache_refs(series)
    pin = load_pin(series.root / "upstream" / "streampetr.toml")
    assert (pin.commit, pin.source, pin.url) == (head, fork.as_uri(), series.upstream.as_uri())
    toml = (series.root / "upstream" / "streampetr.toml").read_text()
    assert f'commit = "{head}"\n# where the commit above lives (it is not on url)\nsource = "' in toml
    capsys.readouterr()
    assert series.run("apply") == 0 and "up to date" in capsys.readouterr().out
    shutil.rmtree(series.cache)  # a fresh machine: the pin's source serves its commit
    assert series.run("fetch") == 0
    assert (
        git(series.cache / "mirrors" / "exiawsh+StreamPETR.git", "cat-file", "-t", head).strip() == "commit"
    )
    assert series.run("rebase", "main") == 0  # a bare name: the pinned url's main, not the fork's
    pin = load_pin(series.root / "upstream" / "streampetr.toml")
    assert (pin.commit, pin.source) == (series.pin, None)
    assert "source" not in (series.root / "upstream" / "streampetr.toml").read_text()


def test_abort_drops_the_targets_keep_ref_and_a_bare_name_is_the_pinned_urls_branch(
    series: Project, tmp_path: Path, capsys
) -> None:
    fork, _ = fork_of(series, tmp_path, {"pkg/model.py": patched(MODEL, 5, "    return 0  # fork")})
    upstream_head = commit_files(series.upstream, {"docs/up.md": "up\n"}, "Upstream docs")
    before = cache_refs(series)
    assert series.run("rebase", "main", "--from", str(fork)) == 1  # the fork's main conflicts
    assert series.run("rebase", "--abort") == 0
    assert cache_refs(series) == before
    assert series.run("rebase", "main") == 0  # no --from: upstream's main, not the fork's
    pin = load_pin(series.root / "upstream" / "streampetr.toml")
    assert (pin.commit, pin.source) == (upstream_head, None)


def test_a_local_path_source_warns_how_to_point_the_pin(series: Project, tmp_path: Path, capsys) -> None:
    fork, head = fork_of(series, tmp_path, {"docs/fork.md": "fork\n"})
    published = "https://git.example.invalid/someone/StreamPETR"
    git(fork, "remote", "set-url", "origin", published)
    assert series.run("rebase", "main", "--from", str(fork)) == 0
    out = capsys.readouterr().out
    assert f"the new commit came from the local path {fork}" in out
    assert f"the pin's url {series.upstream.as_uri()} may not serve it" in out
    assert "--from <URL that has the commit>" in out and f'source = "{published}"' in out
    assert load_pin(series.root / "upstream" / "streampetr.toml").source is None


def without_report(state: dict) -> dict:
    """`project_state` less the report `--check` writes beside the checkout."""
    return {**state, "upstream_dir": [n for n in state["upstream_dir"] if not n.startswith("rebase-report.")]}


def test_check_prints_the_statuses_and_changes_nothing(series: Project, capsys) -> None:
    before = project_state(series)
    new = move_into_src(series)
    capsys.readouterr()
    assert series.run("rebase", "--check", "main") == 0
    out = capsys.readouterr().out
    assert "use-dali.patch: merged-3way (tools/train.py → src/tools/train.py)" in out
    assert "the series carries over" in out
    assert without_report(project_state(series)) == before
    report = json.loads((series.root / "upstream" / "rebase-report.json").read_text())
    assert (report["mode"], report["target"], report["target_commit"], report["carries_over"]) == (
        "check", "streampetr", new, True,
    )  # fmt: skip
    assert report["would_stop"] is None and not any(e["provisional"] for e in report["patch_entries"])

    commit_files(series.upstream, {"src/pkg/model.py": patched(MODEL, 5, "    return 0  # theirs")}, "Edit")
    assert series.run("rebase", "--check", "main", "--report", str(series.root / "watch" / "r.json")) == 1
    captured = capsys.readouterr()
    assert "model.patch: conflict (pkg/model.py → src/pkg/model.py)" in captured.out
    assert "would not carry over" in captured.err
    report = json.loads((series.root / "watch" / "r.json").read_text())
    assert report["would_stop"]["kind"] == "conflict" and report["would_stop"]["patch"] == "model.patch"
    assert (series.root / "watch" / "r.md").is_file() and report["carries_over"] is False
    assert without_report(project_state(series)) == before


def test_check_marks_the_statuses_after_a_stop_provisional(series: Project, tmp_path: Path, capsys) -> None:
    """The real run stops at the first patch; --check goes on without it and says so per status."""
    series.patch_dir.joinpath("series").write_text("model.patch\nuse-dali.patch\n")
    assert series.run("apply") == 0
    commit_files(series.upstream, {"pkg/model.py": patched(MODEL, 5, "    return 0  # theirs")}, "Edit")
    capsys.readouterr()
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert "  model.patch: conflict\n" in out
    assert "use-dali.patch: clean [provisional: after the stop at model.patch]" in out
    report = json.loads((series.root / "upstream" / "rebase-report.json").read_text())
    assert [(e["name"], e["provisional"]) for e in report["patch_entries"]] == [
        ("model.patch", False), ("use-dali.patch", True),
    ]  # fmt: skip


def test_git_progress_stays_off_a_redirected_log(series: Project, tmp_path: Path) -> None:
    fork, _ = fork_of(series, tmp_path, {"docs/fork.md": "fork\n"})
    # stderr is a pipe, not a terminal; git would show even a short meter at once (no 2 s delay)
    proc = series.call("rebase", "main", "--from", fork.as_uri(), GIT_PROGRESS_DELAY="0")
    assert proc.returncode == 0 and "From " in proc.stderr  # git's messages are passed on
    assert "Counting objects" not in proc.stderr  # its meter is not (the pipe reads a \r as a line end)


@pytest.mark.parametrize("source", ["file:///nonexistent/StreamPETR", "local"])
def test_every_fetch_error_ends_with_the_next_step(
    series: Project, tmp_path: Path, source: str, capsys
) -> None:
    fork, _ = fork_of(series, tmp_path, {"docs/fork.md": "fork\n"})
    wanted = "2" * 40
    assert series.run("rebase", wanted, "--from", str(fork) if source == "local" else source) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("Next: ") and "--from" in last
