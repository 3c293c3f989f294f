"""Git's own `index.lock` left in the checkout by a killed git is removed when it is provably the
tool's own (apply's `git reset`), else reported with the command that clears it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from scenario import configure_v1, edit_by_hand, observed
from tooling_repos import Project, git


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


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
