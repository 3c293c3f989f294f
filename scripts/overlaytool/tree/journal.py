"""The apply journal: what a run is about to write, on disk (fsynced) before the work tree is touched.

`.git/streampetr-dali/journal.json` lists every path the run will write and the states
([mode, blob id], or None for absent) that count as the tool's own there: the state found before
the run (already checked to be the last apply's result or pristine upstream) and the state the run
writes. A run killed at any point leaves the journal behind; the rerun accepts exactly those states
as its own, finishes the job and deletes the journal. Anything else at a journaled path is a user
edit and is refused as before.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic_write import replace_file
from ..checkout.gitdir import state_dir


def journal_path(checkout: Path) -> Path:
    """Where the journal of `checkout` lives."""
    return state_dir(checkout) / "journal.json"


def read_journal(checkout: Path) -> dict | None:
    """The journal a killed run left, or None."""
    path = journal_path(checkout)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def owns(journal: dict | None, rel: str, state: list[str] | None) -> bool:
    """True when `state` at `rel` is one the journaled run may have left there."""
    return journal is not None and rel in journal["paths"] and state in journal["paths"][rel]


def write_journal(checkout: Path, journal: dict) -> None:
    """Record the plan durably (write, fsync, rename, fsync the directory)."""
    replace_file(journal_path(checkout), json.dumps(journal, indent=1, sort_keys=True) + "\n")


def clear_journal(checkout: Path) -> None:
    """The run completed: forget the plan."""
    journal_path(checkout).unlink(missing_ok=True)
