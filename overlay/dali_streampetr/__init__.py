"""DALI loader for StreamPETR's training modes (streaming, single frame, sliding window) and its test
path (``data.test``, ``data.val``). The entry points are this package's names (:data:`__all__`),
imported on first use (PEP 562), so ``import dali_streampetr`` imports neither torch, DALI nor mmcv;
the project's own tools reach the loader through them and :mod:`.toolkit` only (docs/loader.md,
"Entry points")."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

# public name -> the module (under this package) that defines it
_EXPORTS = {
    "build_loader": "loader",
    "DaliStreamLoader": "loader",
    "LoaderConfig": "settings",
    "loader_config_from": "config.reader",
    "UnsupportedConfigError": "settings",
    "uses_dali": "settings",
    "checkpoint_globals": "checkpoint_numpy",
    "build_dali_loader": "runner.dataloader",
    "to_collated": "runner.collate",
    "to_eval_collated": "runner.collate",
    "SkippedImages": "runner.collate",
}
__all__ = sorted(_EXPORTS)


def _lazy_face(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (this one, :mod:`.runner`) whose names
    (``exports``: name -> its module under ``package``) are each imported on first use (PEP 562)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy_face(__name__, _EXPORTS)
