"""The equivalence comparator's image check (`scripts/equivalence/compare.py`) can fail: each wrong
image a loader bug could produce (tests/image_perturbations.py) fails it on a batch of real JPEGs
decoded by the DALI loader (the loader tests' tiny data set, tests/loader/loader_data.py), while the
batch itself passes."""

from __future__ import annotations

import numpy as np
import pytest
from dali_streampetr.loader import build_loader
from equivalence.compare import ImageStats
from image_perturbations import PERTURBATIONS, perturbed
from loader_data import make_dataset, tiny_config


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    cfg = tiny_config()
    with build_loader(cfg, make_dataset(tmp_path_factory.mktemp("tiny_nuscenes")), seed=3) as loader:
        img = next(loader)["img"]
    return img, cfg["img_norm_cfg"]


def _compare(a, b, std) -> ImageStats:
    """The comparator's image check (``BatchComparator.fields["img"]``) of ``a`` against ``b``."""
    stats = ImageStats(np.asarray(std, dtype=np.float32))
    stats.update(a, b)
    return stats


def test_the_batch_passes_against_itself(batch) -> None:
    img, norm = batch
    assert _compare(img, img.clone(), norm["std"]).ok()


@pytest.mark.parametrize("name", PERTURBATIONS)
def test_every_wrong_image_fails_the_comparison(batch, name) -> None:
    img, norm = batch
    stats = _compare(perturbed(img, norm["mean"], norm["std"], name), img, norm["std"])
    assert not stats.ok(), stats.summary()
