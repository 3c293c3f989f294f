"""Thin wrappers around the git command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .errors import OverlayError

# Reproducible identity and dates for commits the tooling makes (exports must be byte-stable).
TOOL_IDENTITY = {
    "GIT_AUTHOR_NAME": "streampetr-dali",
    "GIT_AUTHOR_EMAIL": "dev@streampetr-dali.invalid",
    "GIT_COMMITTER_NAME": "streampetr-dali",
    "GIT_COMMITTER_EMAIL": "dev@streampetr-dali.invalid",
    "GIT_AUTHOR_DATE": "2026-11-30T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-30T00:00:00+00:00",
}


def git(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    input: bytes | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """Run git and capture its output; raise OverlayError with git's message when `check` fails.

    Text is UTF-8 whatever the locale (other bytes kept as surrogate escapes)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=git_env(env),
        input=input if not text or input is None else input.decode("utf-8", errors="surrogateescape"),
        capture_output=True,
        text=text,
        encoding="utf-8" if text else None,
        errors="surrogateescape" if text else None,
    )
    if check and proc.returncode != 0:
        err = proc.stderr.strip() if text else proc.stderr.decode(errors="replace").strip()
        raise OverlayError(f"git {' '.join(args)} failed in {cwd or '.'}:\n{err}")
    return proc


def git_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every git command of the tools runs with (no prompts, C locale)."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}


def git_out(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """stdout of a successful git command, stripped."""
    return git(*args, cwd=cwd, env=env).stdout.strip()


def has_commit(repo: Path, commit: str) -> bool:
    """True when `repo` holds `commit` as a commit object."""
    return git("cat-file", "-e", f"{commit}^{{commit}}", cwd=repo, check=False).returncode == 0


def tree_files(repo: Path, rev: str = "HEAD") -> set[str]:
    """The files of `repo`'s tree at `rev`."""
    return {p for p in git("ls-tree", "-r", "--name-only", "-z", rev, cwd=repo).stdout.split("\0") if p}
