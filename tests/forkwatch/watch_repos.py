"""Forks of the test project's upstream, as local repositories (for tests/forkwatch)."""

from __future__ import annotations

from pathlib import Path

from tooling_repos import Project, git


def fork_of(project: Project, where: Path) -> Path:
    """A fork: a clone of the project's upstream at `where` (a local path, not a URL)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    git(where.parent, "clone", "-q", str(project.upstream), str(where))
    return where
