"""Overlay tooling: pins, the local upstream cache, the patch series, apply/refresh/rebase.
Stdlib only (Python >= 3.11), so it runs before any environment is built.
"""

from __future__ import annotations

import importlib
from typing import Any

# the face: module of this package -> the names other packages take from it
_FACE = {
    "atomic_write": ("replace_file",),
    "cache": ("cache_root",),
    "errors": ("OverlayError",),
    "targets": ("REPO_ROOT", "Target", "load_targets", "missing_pins"),
    "tree.apply": ("applied_files",),
    "tree.code_root": ("code_root", "require_code_root"),
}
_EXPORTS = {name: module for module, names in _FACE.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
