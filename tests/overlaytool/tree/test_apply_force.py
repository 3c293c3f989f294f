"""`apply --force` killed (SIGKILL) after every step converges on a rerun; git's own `index.lock`
left in the checkout by a killed git is removed when it is provably the tool's own, else reported
with the command that clears it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from scenario import configure_v1, observed
from tooling_repos import Project, git

# What `apply --force` goes through on an applied tree with hand edits, a deleted overlay file
# and a commit made by hand on top of the pin.
FORCE_STEPS = [
    "mirror exiawsh+StreamPETR:lock",
    "StreamPETR:lock",
    "StreamPETR:index",
    "StreamPETR:journal",
    "StreamPETR:git-reset:started",
    "StreamPETR:head",
    "StreamPETR:write-1:tmp",
    "StreamPETR:write-1",
    "StreamPETR:write-2",
    "StreamPETR:write-3:tmp",
    "StreamPETR:write-3",
    "StreamPETR:stamp",
    "mirror open-mmlab+mmdetection3d:lock",
    "mmdetection3d:lock",
    "mmdetection3d:index",
]


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def edit_by_hand(project: Project) -> None:
    """Edits apply refuses without --force: a patched file, a deleted overlay file, a hand commit."""
    checkout = project.checkout
    (checkout / "tools" / "train.py").write_text("my edit\n")
    (checkout / "cfg.py").unlink()
    (checkout / "mine.py").write_text("mine\n")
    git(checkout, "add", "mine.py")
    git(checkout, "commit", "-q", "-m", "My commit")


def test_the_kill_steps_are_every_step_of_apply_force(project: Project, texts, tmp_path: Path) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    edit_by_hand(project)
    trace = tmp_path / "trace"
    assert project.call("apply", "--force", STREAMPETR_DALI_TEST_TRACE=str(trace)).returncode == 0
    assert list(dict.fromkeys(trace.read_text().split("\n")[:-1])) == FORCE_STEPS


@pytest.mark.parametrize("step", FORCE_STEPS)
def test_apply_force_killed_at_every_step_converges_on_a_rerun(
    project: Project, texts, clean_fresh: dict, step: str
) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    edit_by_hand(project)
    killed = project.call("apply", "--force", STREAMPETR_DALI_TEST_KILL_AT=step)
    assert killed.returncode == -9, f"not killed at {step}: {killed.stderr}"
    rerun = project.call("apply", "--force")
    assert rerun.returncode == 0, rerun.stderr[-600:]
    assert observed(project) == clean_fresh
    assert project.call("apply").returncode == 0  # and a plain apply finds nothing to do
    assert observed(project) == clean_fresh


def test_index_lock_of_a_killed_git_reset_of_apply_is_removed(project: Project, texts, clean_fresh) -> None:
    """A kill while apply's own `git reset` held .git/index.lock (the tool's record of that git says
    so, and the process is gone): the rerun removes the lock and converges."""
    configure_v1(project, texts)
    assert project.run("apply") == 0
    edit_by_hand(project)
    killed = project.call("apply", "--force", STREAMPETR_DALI_TEST_KILL_AT="StreamPETR:git-reset:started")
    assert killed.returncode == -9, killed.stderr
    record = json.loads((project.checkout / ".git" / "streampetr-dali" / "index-git.json").read_text())
    deadline = time.monotonic() + 30
    while running(record["pid"]) and time.monotonic() < deadline:
        time.sleep(0.02)  # the orphaned git finishes; a process-group kill would have ended it too
    lock = project.checkout / ".git" / "index.lock"
    lock.write_text("")  # what the git reset leaves when it is killed with its parent
    rerun = project.call("apply", "--force")
    assert rerun.returncode == 0, rerun.stderr[-600:]
    assert "removed .git/index.lock left by apply's own killed `git reset`" in rerun.stderr
    assert not lock.exists()
    assert observed(project) == clean_fresh


def test_an_index_lock_of_unknown_origin_is_reported_with_the_command_that_clears_it(
    project: Project, texts, clean_fresh
) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    lock = project.checkout / ".git" / "index.lock"
    lock.write_text("")  # a git the user ran, killed
    before = git(project.checkout, "rev-parse", "HEAD")
    refused = project.call("apply")
    assert refused.returncode == 1
    assert f"{lock} exists" in refused.stderr and f"rm {lock}" in refused.stderr
    assert lock.exists() and git(project.checkout, "rev-parse", "HEAD") == before
    lock.unlink()
    assert project.call("apply").returncode == 0
    assert observed(project) == clean_fresh
