"""Run build commands with their output in the log file and short progress on the console."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from gpukit import Stopwatch

from .errors import EnvBuildError
from .timings import eta_line, human, record

HEARTBEAT_S = 30.0
NINJA_PROGRESS = re.compile(r"^\s*\[(\d+)/(\d+)\]")
# Ordered by how much they say: a compiler diagnostic beats pip's summary of it.
ERROR_PATTERNS = (
    re.compile(r":\d+(:\d+)?: (fatal )?error: "),
    re.compile(r"^\s*ERROR: (?!Location)"),
    re.compile(r"^\s*error: "),
    re.compile(r"^\w+(\.\w+)*(Error|Exception): "),
)


def first_error(lines: Sequence[str], context: int = 3) -> str:
    """The first "real" error in a command's output with a few lines around it ('' if none)."""
    for pattern in ERROR_PATTERNS:
        for i, line in enumerate(lines):
            if pattern.search(line):
                start = max(0, i - 1)
                return "".join(lines[start : i + context + 1]).rstrip()
    return "".join(lines[-context * 3 :]).rstrip()


def compile_progress(progress: list[tuple[int, int, float]], elapsed: float) -> str:
    """` (compiled 1/2, ≈ 40 s left)` from the latest ninja count: the rate so far, counting down."""
    if not progress:
        return ""
    done, total, at = progress[0]
    if done >= total or done == 0:
        return f" (compiled {done}/{total})"
    left = max(at * total / done - elapsed, 0.0)
    return f" (compiled {done}/{total}, ≈ {human(left)} left)"


class BuildLog:
    """Numbered build steps; every command's output is appended to `path`."""

    def __init__(self, path: Path, total_steps: int) -> None:
        self.path = path
        self.total = total_steps
        self.step = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a", encoding="utf-8")
        self._write(f"\n===== upstream env build {time.strftime('%Y-%m-%d %H:%M:%S')} =====\n")

    def _write(self, text: str) -> None:
        self._fh.write(text)
        self._fh.flush()

    def say(self, message: str) -> None:
        """A console line that is also logged."""
        print(message, file=sys.stderr, flush=True)
        self._write(f"# {message}\n")

    def begin(self, title: str, timing: str | None = None) -> Stopwatch:
        """Start a numbered step; with `timing` (a `timings.REFERENCE` key) print its measured ETA."""
        self.step += 1
        self.say(f"[{self.step}/{self.total}] {title}" + (f"; {eta_line(timing)}" if timing else ""))
        return Stopwatch()

    def done(self, started: Stopwatch, note: str = "", timing: str | None = None) -> float:
        """End a step; with `timing`, record its time for the next build's ETA."""
        seconds, cpu = started.read()
        self.say(started.done_line(seconds, cpu, note))
        if timing:
            record(timing, seconds, cpu)
        return seconds

    def run(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        what: str = "",
    ) -> None:
        """Run `cmd`; its output goes to the log; raise EnvBuildError with the first error on failure."""
        self._write(f"$ {' '.join(map(str, cmd))}\n")
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        lines: list[str] = []
        started = time.monotonic()
        progress: list[tuple[int, int, float]] = []  # the latest ninja [done/total] and when

        name = what or Path(str(cmd[0])).name  # a beat names its command: one beside the step beats too

        def heartbeat() -> None:  # on a timer: a compile prints nothing for minutes
            while not stop.wait(HEARTBEAT_S):
                elapsed = time.monotonic() - started
                print(
                    f"      ... {name}: {elapsed:.0f} s{compile_progress(progress, elapsed)}",
                    file=sys.stderr,
                    flush=True,
                )

        stop = threading.Event()
        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        try:
            for line in proc.stdout:
                lines.append(line)
                self._write(line)
                if match := NINJA_PROGRESS.match(line):  # ninja prints [done/total] as units finish
                    progress[:] = [(int(match.group(1)), int(match.group(2)), time.monotonic() - started)]
        finally:
            stop.set()
            beat.join()
        code = proc.wait()
        if code != 0:
            raise EnvBuildError(
                f"{what or cmd[0]} failed (exit {code}). First error:\n{first_error(lines)}\n"
                f"Full output: {self.path}"
            )

    def close(self) -> None:
        self._fh.close()
