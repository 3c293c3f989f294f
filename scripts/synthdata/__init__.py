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

from .catalog import MINI_SCENES
from .dataset import DEFAULT_SAMPLES_PER_SCENE, DEFAULT_SCENES, default_root, ensure_dataset

# the face: what other packages take (stdlib only until a data set is generated)
__all__ = ["DEFAULT_SAMPLES_PER_SCENE", "DEFAULT_SCENES", "MINI_SCENES", "default_root", "ensure_dataset"]
