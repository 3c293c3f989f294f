"""The kit runner's numbered steps, the commands they run, and the failure a step raises (stdlib only)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


class CheckError(Exception):
    """A failed step; the message says what and where."""


class Steps:
    """Numbered steps with their times; a failed step is recorded and named at the end."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.failed, self.times = total, 0, [], {}

    def begin(self, title: str) -> float:
        self.n += 1
        print(f"[{self.n}/{self.total}] {title}", flush=True)
        return time.monotonic()

    def end(self, title: str, started: float) -> None:
        self.times[title] = round(time.monotonic() - started, 1)
        print(f"      done in {self.times[title]:.1f} s", flush=True)


def run(cmd: list, *, env: dict[str, str] | None = None, cwd: Path | None = None, what: str) -> str:
    """Run ``cmd``, its output captured; raise CheckError naming ``what`` on a non-zero exit."""
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, text=True, capture_output=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise CheckError(f"{what} failed (exit {proc.returncode}):\n{output[-4000:]}")
    return output
