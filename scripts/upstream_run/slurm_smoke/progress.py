"""Progress lines of the SLURM smoke run, and the failure a check raises."""

from __future__ import annotations

import time

T0 = time.monotonic()


def say(message: str) -> None:
    """A progress line, with the seconds since the start."""
    print(f"slurm_smoke [{time.monotonic() - T0:4.0f} s]: {message}", flush=True)


class SmokeError(Exception):
    """A check of the smoke run failed (the message says which and shows the job's output)."""
