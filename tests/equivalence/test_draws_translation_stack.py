"""Upstream + stack tier: a config with ``translation_std`` > 0 (GlobalRotScaleTransImage's normal
translation draws, which the DALI loader reproduces) passes the draw comparison with the
translations compared as draws, and a loader drawing them with another spread fails it."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.stack]
STD = [0.5, 0.5, 0.25]


@pytest.fixture(scope="module")
def configs(synthetic_dataset):
    from dali_streampetr.config.reader import loader_config_from
    from equivalence.original import import_upstream, load_config

    import_upstream()
    cfg = load_config("r50", synthetic_dataset)
    step = next(t for t in cfg.data.train.pipeline if t["type"] == "GlobalRotScaleTransImage")
    step["translation_std"] = STD
    loader_cfg = loader_config_from(cfg)
    assert list(loader_cfg.aug.translation_std) == STD
    return cfg, loader_cfg


def test_translation_draws_are_compared_as_draws_and_pass(configs) -> None:
    from equivalence.draws import compare_draws, dali_draws, upstream_draws
    from equivalence.harness import pad_threshold

    cfg, loader_cfg = configs
    result = compare_draws(
        dali_draws(loader_cfg, 2000, 0), upstream_draws(cfg, 2000, 0), pad_threshold(loader_cfg)
    )
    assert {result[k]["test"] for k in ("tx", "ty", "tz")} == {"ks_2samp"}
    failed = {k: v for k, v in result.items() if k != "n" and not v["ok"]}
    assert not failed, failed


def test_a_translation_of_another_spread_fails(configs) -> None:
    from equivalence.draws import compare_draws, dali_draws, upstream_draws
    from equivalence.harness import pad_threshold

    cfg, loader_cfg = configs
    wrong = dataclasses.replace(
        loader_cfg, aug=dataclasses.replace(loader_cfg.aug, translation_std=(1.0, 0.5, 0.25))
    )
    result = compare_draws(
        dali_draws(wrong, 2000, 0), upstream_draws(cfg, 2000, 0), pad_threshold(loader_cfg)
    )
    assert not result["tx"]["ok"] and result["ty"]["ok"] and result["tz"]["ok"]
    still = dataclasses.replace(
        loader_cfg, aug=dataclasses.replace(loader_cfg.aug, translation_std=(0.0, 0.0, 0.0))
    )
    result = compare_draws(
        dali_draws(still, 2000, 0), upstream_draws(cfg, 2000, 0), pad_threshold(loader_cfg)
    )
    assert not any(result[k]["ok"] for k in ("tx", "ty", "tz"))
