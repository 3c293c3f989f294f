"""Upstream + stack tier: the DALI test loader against upstream's own test DataLoader (what
``tools/test.py`` builds): every config of the pin has a test path the loader reads, the batches of
1 and 3 ranks (4 val frames, padded by wrapping to 6 on 3) are the same frames in the same order
with the same collated structure, exact geometry and images within the tolerance; and the
comparison is able to fail.
``nox -s equivalence -- --split test --all-upstream-configs`` runs it for every config and 1, 2, 3
ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.stack]


@pytest.fixture(scope="module")
def upstream() -> None:
    from equivalence.original import import_upstream

    import_upstream()


def test_every_config_of_the_pin_has_a_test_path_the_loader_reads(upstream, synthetic_dataset: Path) -> None:
    from dali_streampetr.config.reader import loader_config_from
    from dali_streampetr.settings import TEST
    from equivalence.configs import upstream_configs
    from equivalence.eval_split import load_test_config
    from equivalence.original import streampetr_target

    configs = upstream_configs(streampetr_target())
    assert len(configs) == 11
    for config in configs:
        settings = loader_config_from(load_test_config(config, synthetic_dataset), "test")
        assert settings.mode.name == TEST and settings.samples_per_gpu == 1, config


def test_test_batches_equal_upstreams_on_one_and_three_ranks(upstream, synthetic_dataset: Path) -> None:
    from equivalence.eval_split import compare_test_split

    record = compare_test_split("r50", synthetic_dataset, (1, 3))
    assert record["frames"] == 4
    assert record["orders"]["3"]["dali"] == [[0, 1], [2, 3], [0, 1]]
    assert all(o["same"] and o["gathered_is_every_frame_once"] for o in record["orders"].values())
    assert record["structure_diffs"] == []
    fields = record["fields"]
    assert {k for k in fields if k != "img"} == {"lidar2img", "intrinsics", "extrinsics", "timestamp",
                                                 "img_timestamp", "ego_pose", "ego_pose_inv"}  # fmt: skip
    assert all(fields[k]["max_abs"] == 0 for k in fields if k != "img")
    assert fields["img"]["ok"] and fields["img"]["worst_image_mean_abs"] < 0.5
    assert record["ok"]


def test_the_comparison_names_a_missing_meta_key_and_a_moved_matrix(
    upstream, synthetic_dataset: Path
) -> None:
    """The check is able to fail: a DALI batch without upstream's ``flip`` meta, and one whose
    ``lidar2img`` is off by a pixel's shift, are both caught."""
    import numpy as np
    from dali_streampetr import build_loader, to_eval_collated
    from equivalence.compare import FieldStats, walk
    from equivalence.eval_split import load_test_config, original_test_loader
    from mmdet3d.datasets import build_dataset

    cfg = load_test_config("r50", synthetic_dataset)
    theirs = next(iter(original_test_loader(build_dataset(cfg.data.test), 0, 1)))
    with build_loader(cfg, split="test", collate=to_eval_collated) as loader:
        ours = next(loader)
    problems: list[str] = []
    paths = {p for p, _, _ in walk(ours, theirs, "", problems)}
    assert {"img[0][0]", "lidar2img[0][0][0]", "timestamp[0][0][0]"} <= paths, paths
    assert problems == []
    del ours["img_metas"][0].data[0][0]["flip"]
    ours["lidar2img"][0].data[0][0][:, 0, 3] += 1.0
    stats = FieldStats("lidar2img", "geometry")
    for path, a, b in walk(ours, theirs, "", problems):
        if path.startswith("lidar2img"):
            stats.update(a, b)
    assert any("img_metas" in p and "keys" in p for p in problems), problems
    assert not stats.ok() and np.isclose(stats.max_abs, 1.0)
