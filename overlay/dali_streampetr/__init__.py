"""DALI loader for StreamPETR's training modes: streaming (``seq_mode=True``), single frame and
sliding window, and for its test path (``data.test``, ``data.val``): one loader, its split chosen
when the config is read (:mod:`.config.reader`), its sampling mode (:mod:`.sampling.modes`).

The entry points are this package's names (:data:`__all__`), imported on first use (PEP 562), so
``import dali_streampetr`` imports neither torch, DALI nor mmcv. Everything imports without
mmcv/mmdet3d except the mmcv side, :mod:`.runner` (its :mod:`.runner.schedule` excepted): the names
from :mod:`.runner` need the upstream env. The project's own tools reach the loader through these
names and :mod:`.toolkit` only.

The parts, in the order a batch passes them: :mod:`.settings` (what the loader's settings are),
:mod:`.config` (a StreamPETR config read once into them),
:mod:`.frames` (the info file and the frame store), :mod:`.sampling` (which frames, which draws),
:mod:`.pipeline` (the DALI graph, its external source and guards), :mod:`.batch` (targets, wire
format, assembly, schema), :mod:`.loader` (the loader itself) and :mod:`.runner` (the mmcv side).
"""

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
