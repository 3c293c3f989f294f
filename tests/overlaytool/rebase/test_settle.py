"""Stops the rebase settles itself (issue 60): a patch whose change the target already has is dropped
with its evidence, one whose change the target lacks still stops; a conflict of line endings alone
merges with the target's endings. Each settlement is in the statuses, the report and the finish."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
from tooling_repos import TOOL_IDENTITY, Project, commit_files, git, make_patch, with_filename

# the shape of StreamPETR's mmdet_train.py and tools/test.py around the two patches' lines
HOOK = "        runner.register_hook(eval_hook(val_dataloader, **eval_cfg))\n"
LOW = "        runner.register_hook(eval_hook(val_dataloader, **eval_cfg), priority='LOW')\n"
COMMENT = "        # LOW: after IterTimerHook, before the loggers, as mmdet does\n"
PREFIX = "osp.join('test', args.config.split('/')[-1].split('.')[-2], time.ctime())\n"
SET = f"        kwargs['jsonfile_prefix'] = {PREFIX}"
SETDEFAULT = f"        kwargs.setdefault('jsonfile_prefix', {PREFIX[:-2]}))\n"
GUARD = f"        if 'jsonfile_prefix' not in kwargs:\n    {SET}"


def _code(n: int, middle: str) -> str:
    return (
        "".join(f"    step_{i} = {i}\n" for i in range(n))
        + middle
        + "".join(f"    tail_{i} = {i}\n" for i in range(n))
    )


TRAIN, TEST = "projects/apis/mmdet_train.py", "tools/test.py"
PIN = {TRAIN: _code(8, HOOK), TEST: _code(8, SET)}


def _rebase_onto(project: Project, tmp: Path, fork: dict[str, str]) -> str:
    """The series (the hook patch, the jsonfile patch) on the pin; the fork's commit on top."""
    project.pin = commit_files(project.upstream, PIN, "pin")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    project.add_patch("eval-hook.patch", make_patch(tmp, PIN, {TRAIN: _code(8, COMMENT + LOW)}, "Eval LOW"))
    project.add_patch("jsonfile.patch", make_patch(tmp, PIN, {TEST: _code(8, SETDEFAULT)}, "Keep prefix"))
    assert project.run("apply") == 0
    return commit_files(project.upstream, fork, "the fork")


@pytest.fixture
def jdmp(project: Project, tmp_path: Path) -> Project:
    """TRAILab/StreamPETR-JDMP's shape: the hook patch's line verbatim without its comment; the
    jsonfile patch's change in the fork's own words (a guard instead of setdefault)."""
    _rebase_onto(project, tmp_path, {TRAIN: _code(8, LOW), TEST: _code(8, GUARD)})
    return project


def test_a_change_the_target_has_is_dropped_with_evidence_and_one_it_lacks_stops(
    jdmp: Project, capsys
) -> None:
    assert jdmp.run("rebase", "main") == 1
    err = capsys.readouterr().err
    assert "Patch jsonfile.patch conflicts with upstream" in err
    assert "eval-hook.patch: already-upstream (settled without a stop: see below)" in err
    assert (
        f"eval-hook.patch: already at the target: {TRAIN} @@ -6,7 +6,8 @@: the target has "
        f"`{LOW.strip()}` (line 9); the line(s) it removes are gone (`{HOOK.strip()}`); its comment line(s) "
        f"not required (`{COMMENT.strip()}`)" in err
    )
    # the one a person decides: the stop says the target already guards the key
    assert "The target already guards the key: `if 'jsonfile_prefix' not in kwargs:` (line 9)" in err
    report = json.loads((jdmp.root / "upstream" / "rebase-report.json").read_text())
    assert report["statuses"]["eval-hook.patch"] == "already-upstream"
    assert report["settled"]["eval-hook.patch"][0].startswith("already at the target: ")
    assert "## Settled without a stop" in (jdmp.root / "upstream" / "rebase-report.md").read_text()

    git(jdmp.checkout, "checkout", "HEAD", "--", TEST)  # the fork's side, then --skip as the hint says
    assert jdmp.run("rebase", "--skip") == 0
    out = capsys.readouterr().out
    assert "settled without a stop" in out and "eval-hook.patch: already at the target:" in out
    names = (jdmp.patch_dir / "series").read_text().split()
    assert "eval-hook.patch" not in names and "jsonfile.patch" not in names


@pytest.mark.parametrize(
    ("fork_train", "status"),
    [
        (_code(8, "        runner.register_hook(MyEvalHook(val_dataloader, **eval_cfg))\n"), "conflict"),
        (_code(8, "        runner.register_hook(eval_hook(val_dataloader), priority='LOW')\n"), "conflict"),
        (LOW + _code(8, "        pass\n"), "already-upstream"),  # moved to the top of the file
    ],
    ids=["the-hook-swapped", "another-call", "moved"],
)
def test_check_drops_only_a_change_the_target_has(
    project: Project, tmp_path: Path, capsys, fork_train: str, status: str
) -> None:
    """shinlnh's shape (the fork swaps the hook) and a near miss keep the stop; the change moved
    elsewhere in the file is found."""
    fork = _rebase_onto(project, tmp_path, {TRAIN: fork_train, TEST: PIN[TEST]})
    project.run("rebase", "--check", fork, "--report", str(tmp_path / "check.json"))
    out = capsys.readouterr().out
    assert f"eval-hook.patch: {status}" in out
    report = json.loads((tmp_path / "check.json").read_text())
    assert report["statuses"]["eval-hook.patch"] == status
    assert bool(report["settled"]) == (status == "already-upstream")
    assert report["statuses"]["jsonfile.patch"].startswith("clean")


def _crlf_patch(base: bytes, new: bytes, rel: str) -> str:
    """A format-patch of `rel` from `base` to `new`, its CRLF bytes kept (make_patch reads text)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        git(repo, "init", "-q")
        subject = "Shard the test set\n\nDescription: test change\nForwarded: not-needed\n"
        for data, message in ((base, "base"), (new, subject)):
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(data)
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", message)
        args = ["format-patch", "--zero-commit", "--no-signature", "--no-numbered", "--full-index", "-1"]
        env = {**TOOL_IDENTITY, "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": tmp}
        proc = subprocess.run(["git", *args, "--stdout"], cwd=repo, env=env, capture_output=True, check=True)
        return proc.stdout.decode()


def test_a_conflict_of_line_endings_alone_merges_with_the_targets_endings(
    project: Project, tmp_path: Path, capsys
) -> None:
    """PrymceQ/BEVModel_StreamPETR's shape: the pin's test.py has CRLF endings, the fork's LF (and an
    edit of its own); the patch's lines are merged in, in LF, without a stop."""
    rel = "projects/core/apis/test.py"
    lf = _code(10, "    collect = 1\n")
    pin = lf.replace("\n", "\r\n")
    ours = lf.replace("    collect = 1\n", "    collect = 1\n    indices = 2\n")
    project.pin = commit_files(project.upstream, {rel: pin}, "pin")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    patch = _crlf_patch(pin.encode(), ours.replace("\n", "\r\n").encode(), rel)
    (project.patch_dir / "shard.patch").write_bytes(with_filename(patch, "shard.patch").encode())
    (project.patch_dir / "series").write_text("shard.patch\n")
    assert project.run("apply") == 0
    fork = lf.replace("    step_0 = 0\n", "    step_0 = 'the fork'\n")
    commit_files(project.upstream, {rel: fork}, "the fork: LF")

    assert project.run("rebase", "main") == 0
    out = capsys.readouterr().out
    assert "shard.patch: merged-3way (settled without a stop: see below)" in out
    assert (
        f"shard.patch: {rel}: the conflict was only line endings (the pin's file CRLF, the target's LF): "
        "merged with the target's LF" in out
    )
    expected = fork.replace("    collect = 1\n", "    collect = 1\n    indices = 2\n")
    assert (project.checkout / rel).read_bytes() == expected.encode()
    (name,) = [n for n in (project.patch_dir / "series").read_text().split() if n.endswith(".patch")]
    assert b"\r" not in (project.patch_dir / name).read_bytes()
    assert project.run("apply") == 0 and "up to date" in capsys.readouterr().out


def test_the_part_of_a_file_the_target_has_is_dropped_and_the_rest_kept(
    project: Project, tmp_path: Path, capsys
) -> None:
    """A two-file patch: the target has its change to one file (which conflicts), the other merges;
    the patch carries over with the other file's part alone."""
    project.pin = commit_files(project.upstream, PIN, "pin")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    both = {TRAIN: _code(8, COMMENT + LOW), TEST: _code(8, SETDEFAULT)}
    project.add_patch("both.patch", make_patch(tmp_path, PIN, both, "Both"))
    assert project.run("apply") == 0
    commit_files(project.upstream, {TRAIN: _code(8, LOW), TEST: "# the fork's\n" + PIN[TEST]}, "fork")
    assert project.run("rebase", "main") == 0
    out = capsys.readouterr().out
    assert "both.patch: merged-3way (settled without a stop: see below)" in out
    assert f"both.patch: already at the target: {TRAIN} @@" in out
    text = (project.patch_dir / "both.patch").read_text()
    assert f"diff --git a/{TEST}" in text and TRAIN not in text
