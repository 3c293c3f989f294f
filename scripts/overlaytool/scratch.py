"""Scratch folders beside a checkout, named `.<checkout>.<kind>-<pid>-...` by the run that made them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def remove_dead_scratch(checkout: Path, kind: str) -> None:
    """Remove the `kind` scratch folders of `checkout` whose run is gone (its pid no longer exists)."""
    prefix = f".{checkout.name}.{kind}-"
    for path in checkout.parent.glob(f"{prefix}*"):
        pid = path.name.removeprefix(prefix).split("-")[0]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, PermissionError):
            continue
