"""Helpers that build throw-away upstream repositories and project roots for the tooling tests."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from overlaytool.__main__ import main
from overlaytool.gitcmd import TOOL_IDENTITY

TRAIN_PY = "".join(f"line {i}\n" for i in range(1, 41))


def git(cwd: Path, *args: str) -> str:
    env = {**TOOL_IDENTITY, "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def commit_files(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_patch(
    tmp: Path, base: dict[str, str], new: dict[str, str], subject: str, header: bool = True
) -> str:
    """A format-patch style patch turning files `base` into `new` (made by real git)."""
    repo = Path(tempfile.mkdtemp(prefix="mk-", dir=tmp))
    git(repo, "init", "-q")
    commit_files(repo, base or {".keep": ""}, "base")
    body = "\n\nDescription: test change\nForwarded: not-needed\n" if header else ""
    for rel, text in new.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            (repo / rel).unlink()
        else:
            (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject + body)
    args = ["format-patch", "--zero-commit", "--no-signature", "--no-stat", "--no-numbered", "--full-index"]
    return git(repo, *args, "--stdout", "-1", "HEAD")


@dataclass
class Project:
    root: Path
    upstream: Path
    mmdet3d: Path
    pin: str
    history: list[str]

    def run(self, *args: str) -> int:
        return main(["--root", str(self.root), *args])

    @property
    def checkout(self) -> Path:
        return self.root / "upstream" / "StreamPETR"

    def add_patch(self, name: str, text: str) -> None:
        (self.root / "patches" / name).write_text(text)
        with (self.root / "patches" / "series").open("a") as f:
            f.write(name + "\n")


def write_pin(path: Path, name: str, url: str, commit: str, checkout: str) -> None:
    path.write_text(
        f'name = "{name}"\nurl = "{url}"\ncommit = "{commit}"\ndate = "2024-06-26"\ncheckout = "{checkout}"\n'
    )
