"""The stamp of the last completed apply (`.git/streampetr-dali/stamp.json`): the pin, a digest of
series and overlay, and every file written with its [mode, blob id]."""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic_write import replace_file
from ..checkout.gitdir import state_dir


def read_stamp(checkout: Path) -> dict | None:
    """The stamp of the last completed apply, or None."""
    path = state_dir(checkout) / "stamp.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_stamp(checkout: Path, stamp: dict) -> None:
    """Replace the stamp atomically."""
    replace_file(state_dir(checkout) / "stamp.json", json.dumps(stamp, indent=1, sort_keys=True) + "\n")
