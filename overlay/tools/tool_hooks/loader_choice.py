"""Which loader ``tools/train.py`` and ``tools/test.py`` read through: the overlay's DALI loader
(``dali_streampetr``) or upstream's dataset and DataLoader, as ``dali_streampetr.uses_dali`` decides
for the split. The test loader is built as the ``--validate`` hook's (``build_val_loader``): only
rank 0, which evaluates, builds the dataset under DALI. Without DALI nothing of DALI is imported.
"""

from __future__ import annotations

import os.path as osp
import sys
from typing import Any


def _overlay_root_on_path() -> None:
    """The overlay's ``dali_streampetr`` package lives at the checkout root, beside ``tools/``."""
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    if root not in (osp.abspath(p or ".") for p in sys.path):
        sys.path.append(root)


def training_sets(cfg: Any) -> list[Any]:
    """``tools/train.py``'s ``datasets``: the DALI loader, else upstream's training dataset."""
    _overlay_root_on_path()
    from dali_streampetr import uses_dali

    if uses_dali(cfg, "train"):
        from dali_streampetr import build_dali_loader

        return [build_dali_loader(cfg, "train")]
    from mmdet3d.datasets import build_dataset

    return [build_dataset(cfg.data.train)]


def test_set_and_loader(cfg: Any, distributed: bool, samples_per_gpu: int) -> tuple[Any, Any]:
    """``tools/test.py``'s ``dataset`` and ``data_loader`` (see the module doc)."""
    from mmcv.runner import get_dist_info
    from mmdet3d.datasets import build_dataset

    _overlay_root_on_path()
    from dali_streampetr import uses_dali
    from dali_streampetr.runner import build_val_loader  # the --validate hook's builder, split test

    dali = uses_dali(cfg, "test")
    dataset = build_dataset(cfg.data.test) if not dali or get_dist_info()[0] == 0 else None
    data_loader = build_val_loader(cfg, dataset, distributed, samples_per_gpu, split="test")
    return data_loader.dataset, data_loader
