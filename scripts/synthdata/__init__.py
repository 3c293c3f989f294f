"""Synthetic nuScenes-format data set (the project's embedded default data).

`ensure_dataset()` returns a data root laid out like nuScenes `v1.0-mini`::

    <root>/v1.0-mini/*.json                  the 13 tables (official mini scene names)
    <root>/samples/CAM_*/<log>__<CAM>__<ts>.jpg   six 1600x900 JPEGs per key frame
    <root>/samples/LIDAR_TOP/<log>__LIDAR_TOP__<ts>.pcd.bin   float32 (N, 5) points
    <root>/maps/<token>.png
    <root>/nuscenes2d_temporal_infos_{train,val}.pkl   StreamPETR's info pickles

Paths inside the info pickles (`lidar_path`, `cams[*]['data_path']`, `sweeps[*]['data_path']`) are
**absolute** (the data root joined with the table's `filename`, which is what StreamPETR's converter
writes when the root is not under the working directory). Use them as they are, like upstream does.
A data set is tied to its location: `ensure_dataset` rebuilds it if it was moved.

Command line: `python -m synthdata --out DIR --scenes N --samples-per-scene M --seed S`.
"""

from __future__ import annotations

import importlib
from typing import Any

# the face: module of this package -> the names other packages take from it
_FACE = {
    "catalog": ("MINI_SCENES",),
    "dataset": ("DEFAULT_SAMPLES_PER_SCENE", "DEFAULT_SCENES", "default_root", "ensure_dataset"),
}
_EXPORTS = {name: module for module, names in _FACE.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
