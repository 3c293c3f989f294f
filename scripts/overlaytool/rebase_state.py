"""The state of a rebase in progress: `.git/streampetr-dali/rebase.json`, saved atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import OverlayError
from .checkout import state_dir
from .targets import Target


def state_path(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase.json"


def in_progress(target: Target) -> bool:
    return (target.checkout / ".git").exists() and state_path(target).exists()


def save_state(target: Target, state: dict) -> None:
    path = state_path(target)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_state(target: Target) -> dict:
    if not in_progress(target):
        raise OverlayError("No rebase is in progress.")
    return json.loads(state_path(target).read_text(encoding="utf-8"))
