"""Run the project's commands as subprocesses inside a project copy, with its private cache."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from overlaytool import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"  # this repository's tooling (overlaytool, forkwatch)


@dataclass(frozen=True)
class Call:
    """A finished command: its exit status (124 on a timeout) and stdout + stderr together."""

    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.strip().splitlines()[-lines:])


def call(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Call:
    """Run `cmd`; never raises for a failing or hanging command (the Call says what happened)."""
    full = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **env}
    try:
        done = subprocess.run(
            cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace", timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Call(124, f"{out}\n(timed out after {timeout:.0f} s)")
    except OSError as exc:
        return Call(127, f"cannot run {cmd[0]}: {exc}")
    return Call(done.returncode, done.stdout)


def overlaytool(project: Path, cache: Path, *args: str, timeout: float = 1800) -> Call:
    """`python -m overlaytool --root <project> args` with the private cache."""
    env = {"PYTHONPATH": str(SCRIPTS), "STREAMPETR_DALI_CACHE": str(cache)}
    return call([sys.executable, "-m", "overlaytool", "--root", str(project), *args], project, env, timeout)
