"""The apply's records in `.git/streampetr-dali/`, replaced atomically: the stamp of the last completed
apply (pin, digest, each file written with its [mode, blob id]) and the journal of a run in progress:
the states each path may hold that count as the run's own, so a rerun after a kill completes the job.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic_write import replace_file
from ..checkout.gitdir import state_dir


def _read(checkout: Path, name: str) -> dict | None:
    path = state_dir(checkout) / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _write(checkout: Path, name: str, data: dict) -> None:
    replace_file(state_dir(checkout) / name, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_stamp(checkout: Path) -> dict | None:
    """The stamp of the last completed apply, or None."""
    return _read(checkout, "stamp.json")


def write_stamp(checkout: Path, stamp: dict) -> None:
    _write(checkout, "stamp.json", stamp)


def read_journal(checkout: Path) -> dict | None:
    """The journal a killed run left, or None."""
    return _read(checkout, "journal.json")


def write_journal(checkout: Path, journal: dict) -> None:
    """Record the plan durably, before the first work-tree write."""
    _write(checkout, "journal.json", journal)


def clear_journal(checkout: Path) -> None:
    """The run completed: forget the plan."""
    (state_dir(checkout) / "journal.json").unlink(missing_ok=True)


def owns(journal: dict | None, rel: str, state: list[str] | None) -> bool:
    """True when `state` at `rel` is one the journaled run may have left there."""
    return journal is not None and rel in journal["paths"] and state in journal["paths"][rel]
