"""The kit runner's numbered steps, the commands they run, and the failure a step raises (stdlib only).

:class:`Stopwatch` (wall and CPU seconds of one step, its "done in" line) is the project's one step
timer: the env builder's, the rehearsal's and the Python matrix's steps take it too.
"""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path


class CheckError(Exception):
    """A failed step; the message says what and where."""


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of every command it waited for, with theirs."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Stopwatch:
    """The wall-clock and CPU seconds (:func:`cpu_seconds`) of one step, from its start."""

    def __init__(self) -> None:
        self.started, self.cpu_started = time.monotonic(), cpu_seconds()

    def read(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds) so far."""
        return time.monotonic() - self.started, cpu_seconds() - self.cpu_started

    @staticmethod
    def done_line(seconds: float, cpu: float, note: str = "") -> str:
        """The console line of a finished step: wall much over CPU / cores: the machine was busy."""
        return f"      done in {seconds:.1f} s (CPU {cpu:.1f} s){(' ' + note) if note else ''}"


class Steps:
    """Numbered steps with their times; a failed step is recorded and named at the end."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.failed, self.times = total, 0, [], {}

    def begin(self, title: str) -> Stopwatch:
        self.n += 1
        print(f"[{self.n}/{self.total}] {title}", flush=True)
        return Stopwatch()

    def end(self, title: str, started: Stopwatch) -> tuple[float, float]:
        """Record and print the step's time; its (wall, CPU) seconds."""
        seconds, cpu = started.read()
        self.times[title] = round(seconds, 1)
        print(started.done_line(seconds, cpu), flush=True)
        return seconds, cpu


def run(cmd: list, *, env: dict[str, str] | None = None, cwd: Path | None = None, what: str) -> str:
    """Run ``cmd``, its output captured; raise CheckError naming ``what`` on a non-zero exit."""
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, text=True, capture_output=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise CheckError(f"{what} failed (exit {proc.returncode}):\n{output[-4000:]}")
    return output
