"""Upstream + stack tier: the comparator's image check fails on every wrong image a loader bug
could produce (tests/image_perturbations.py), on the synthetic set against the original pipeline's
batch (both sides decode the real JPEGs), while the DALI batch itself passes."""

from __future__ import annotations

import pytest
from image_perturbations import PERTURBATIONS, perturbed

pytestmark = [pytest.mark.upstream, pytest.mark.stack]


@pytest.fixture(scope="module")
def pair(synthetic_dataset):
    from equivalence.lockstep import LockStep
    from equivalence.original import import_upstream, load_config

    import_upstream()
    cfg = load_config("r50", synthetic_dataset, samples_per_gpu=1)
    steps = LockStep(cfg, synthetic_dataset, seed=0)
    try:
        return next(steps), cfg.img_norm_cfg
    finally:
        steps.close()


def _compare(dali: dict, original: dict, std):
    from equivalence.compare import BatchComparator

    cmp = BatchComparator(tuple(std))
    cmp.add(dali, original, "batch")
    return cmp


def test_the_dali_batch_passes(pair) -> None:
    steps, norm = pair
    assert _compare(steps.dali_collated, steps.original, norm.std).ok()


@pytest.mark.parametrize("name", PERTURBATIONS)
def test_every_wrong_image_fails(pair, name) -> None:
    from mmcv.parallel import DataContainer

    steps, norm = pair
    img = steps.dali_collated["img"]
    flags = {k: getattr(img, k) for k in ("stack", "padding_value", "cpu_only", "pad_dims")}
    wrong = DataContainer([perturbed(img.data[0], norm.mean, norm.std, name)], **flags)
    cmp = _compare({**steps.dali_collated, "img": wrong}, steps.original, norm.std)
    assert not cmp.fields["img"].ok() and not cmp.ok(), cmp.fields["img"].summary()
    assert not cmp.structure and all(s.ok() for n, s in cmp.fields.items() if n != "img")  # the image alone
