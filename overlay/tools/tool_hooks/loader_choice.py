"""Which loader ``tools/train.py`` and ``tools/test.py`` read through: the overlay's DALI loader
(``dali_streampetr``) when the config asks for it, else upstream's dataset and DataLoader.

- training: ``use_dali_pipeline=True`` gives ``build_dali_loader(cfg, 'train')`` instead of the
  training dataset (the config read once, the distributed arguments from it);
- test: ``tools/test.py``'s loader of ``data.test``, built as the ``--validate`` hook's of ``data.val``
  (``dali_streampetr.runner.build_val_loader``):
  with ``use_dali_test_pipeline`` (default: ``use_dali_pipeline``) the DALI test loader over
  upstream's test dataset, which only rank 0, which evaluates, builds (the other ranks' loaders
  count the frames of the frame store); without it upstream's DataLoader, its sampler split by
  ``data_loading_config.test_sharding``. A distributed run prints each rank's part.

Only with DALI is the checkout root put on ``sys.path`` (this folder, ``tools/``, is ``sys.path[0]``)
and the DALI loader imported; without it the training path imports nothing of the overlay.
"""

from __future__ import annotations

import os.path as osp
import sys
from typing import Any


def _overlay_root_on_path() -> None:
    """The overlay's ``dali_streampetr`` package lives at the checkout root, beside ``tools/``."""
    sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))


def training_sets(cfg: Any) -> list[Any]:
    """``tools/train.py``'s ``datasets``: the DALI loader with ``use_dali_pipeline``, else upstream's
    training dataset."""
    if cfg.get("use_dali_pipeline", False):
        _overlay_root_on_path()
        from dali_streampetr import build_dali_loader

        return [build_dali_loader(cfg, "train")]
    from mmdet3d.datasets import build_dataset

    return [build_dataset(cfg.data.train)]


def test_set_and_loader(cfg: Any, distributed: bool, samples_per_gpu: int) -> tuple[Any, Any]:
    """``tools/test.py``'s ``dataset`` and ``data_loader`` (see the module doc)."""
    from mmcv.runner import get_dist_info
    from mmdet3d.datasets import build_dataset

    use_dali_test = cfg.get("use_dali_test_pipeline", cfg.get("use_dali_pipeline", False))
    dataset = build_dataset(cfg.data.test) if not use_dali_test or get_dist_info()[0] == 0 else None
    if use_dali_test:
        _overlay_root_on_path()
    from dali_streampetr.runner import build_val_loader  # the --validate hook's builder, split test

    data_loader = build_val_loader(cfg, dataset, distributed, samples_per_gpu, split="test")
    return data_loader.dataset, data_loader


def print_skipped_images(data_loader: Any, rank: int) -> None:
    """The images the DALI test loader served black under ``on_bad_image='skip'``, one line each."""
    for token, camera, path in getattr(data_loader, "skipped_images", list)():
        print(f"rank {rank}: image served black (on_bad_image=skip): sample {token}, camera {camera}, {path}")
