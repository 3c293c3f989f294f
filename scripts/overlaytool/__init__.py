"""Overlay tooling: pins, the local upstream cache, the patch series, apply/refresh/rebase.

Stdlib only (Python >= 3.11), so it runs before any environment is built.
"""

from __future__ import annotations

import importlib
from typing import Any


class OverlayError(Exception):
    """A user-facing failure: the message says what is wrong and how to get out."""


# name -> the module of this package that defines it ("module:name" where the face renames it)
_EXPORTS = {
    "replace_file": "atomic_write",
    "cache_root": "cache",
    "is_cached": "cache",
    "mirror_lock": "cache",
    "mirror_path": "cache",
    "has_commit": "gitcmd",
    "overlay_files": "overlay",
    "Pin": "pins",
    "load_pin": "pins",
    "reference_lines": "rebase.references",
    "REPO_ROOT": "targets",
    "Target": "targets",
    "load_targets": "targets",
    "apply_all": "tree.apply",
    "PLUGIN": "tree.code_root",
    "code_root": "tree.code_root",
    "configs_dir": "tree.code_root",
    "require_code_root": "tree.code_root",
    "read_stamp": "tree.stamp",
}
__all__ = sorted([*_EXPORTS, "OverlayError"])


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value
