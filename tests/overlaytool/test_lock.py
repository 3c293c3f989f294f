"""Two `apply` processes at once (real processes, started together) and the locks between them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from overlaytool.lock import hold
from scenario import configure_v1, configure_v2, observed
from tooling_repos import Project, git

ROUNDS = 3


def both(project: Project, *args: str) -> list:
    """Start two identical runs at the same moment; wait for both."""
    procs = [project.spawn(*args), project.spawn(*args)]
    return [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]


def fsck(project: Project) -> None:
    for checkout in (project.checkout, project.checkout / "mmdetection3d"):
        git(checkout, "fsck", "--strict", "--no-dangling")


def test_two_applies_from_scratch_both_succeed(project: Project, texts, clean_fresh) -> None:
    """No checkout and no cache: both clone (each into its own temporary directory), one rename
    wins, the other's copy is discarded; the checkout's .git is whole every time."""
    configure_v1(project, texts)
    for _ in range(ROUNDS):
        shutil.rmtree(project.checkout, ignore_errors=True)
        shutil.rmtree(project.cache, ignore_errors=True)
        for rc, _out, err in both(project, "apply"):
            assert rc == 0, err
        fsck(project)
        assert observed(project) == clean_fresh


def test_two_applies_on_an_applied_tree_both_succeed(project: Project, texts, clean_changed) -> None:
    """Up to date (the case that used to fail with a false "context changed"), then a changed series."""
    configure_v1(project, texts)
    assert project.run("apply") == 0
    for _ in range(ROUNDS):
        results = both(project, "apply")
        assert [rc for rc, _, _ in results] == [0, 0], results
        assert all(out.count("up to date, nothing changed") == 2 for _, out, _ in results)
    configure_v2(project, texts)
    for rc, _out, err in both(project, "apply"):
        assert rc == 0, err
    fsck(project)
    assert observed(project) == clean_changed


def checkout_lock_path(project: Project) -> Path:
    return project.checkout / ".git" / "streampetr-dali" / "lock"


@pytest.mark.parametrize("command", [("apply",), ("refresh",), ("edit",), ("rebase", "HEAD")])
def test_a_second_run_names_the_holder_and_gives_up_after_the_timeout(
    project: Project, texts, command: tuple[str, ...]
) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    with hold(checkout_lock_path(project), "apply", "test"):
        proc = project.call(command[0], "--lock-timeout", "0.5", *command[1:])  # as `nox -s apply -- ...`
    assert proc.returncode == 1
    assert f"waiting for another apply, pid {os.getpid()}, started " in proc.stderr
    assert "gave up after 0.5 s waiting for another apply" in proc.stderr and "--lock-timeout" in proc.stderr


def test_fetch_waits_for_the_mirror_lock(project: Project) -> None:
    assert project.run("fetch") == 0
    lock = project.cache / "mirrors" / "exiawsh+StreamPETR.lock"
    with hold(lock, "fetch", "test"):
        proc = project.call("fetch", "--from", str(project.upstream), STREAMPETR_DALI_LOCK_TIMEOUT="0.3")
    assert proc.returncode == 1
    assert (
        f"waiting for another fetch, pid {os.getpid()}" in proc.stderr
        and "gave up after 0.3 s" in proc.stderr
    )


def test_a_waiting_run_goes_on_when_the_holder_finishes(project: Project, texts, clean_changed) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    configure_v2(project, texts)
    with hold(checkout_lock_path(project), "apply", "test"):
        waiter = project.spawn("apply", STREAMPETR_DALI_LOCK_TIMEOUT="60")
        seen = []
        while not any("waiting for another apply" in line for line in seen):
            line = waiter.stderr.readline()
            assert line, f"the waiter ended without waiting: {''.join(seen)}"
            seen.append(line)
    assert waiter.wait(timeout=120) == 0, "".join(seen) + waiter.stderr.read()
    assert observed(project) == clean_changed


def test_the_lock_of_a_killed_holder_is_free_at_once(project: Project, texts, clean_changed) -> None:
    """SIGKILL right after taking the lock: the lock file still names the dead pid, but the kernel
    released the flock, so the next run neither waits nor needs --force."""
    configure_v1(project, texts)
    assert project.run("apply") == 0
    configure_v2(project, texts)
    killed = project.spawn("apply", STREAMPETR_DALI_TEST_KILL_AT="StreamPETR:lock")
    assert killed.wait(timeout=120) == -9
    assert json.loads(checkout_lock_path(project).read_text())["pid"] == killed.pid
    rerun = project.call("--lock-timeout", "5", "apply")
    assert rerun.returncode == 0, rerun.stderr
    assert "waiting" not in rerun.stderr
    assert observed(project) == clean_changed
