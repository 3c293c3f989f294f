"""Upstream + stack tier: the single-frame (PETRv1) and sliding-window (8-key) modes against the
real upstream dataset and samplers, and every training config of the pin either reproduced or
refused by name. Runs in the OpenMMLab env (`nox -s tests`)."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.stack]

# The pin's training configs and the mode each selects (`nox -s equivalence -- --all-upstream-configs`
# runs every one of them in full; here: the mode of each, and batches of one config per new mode).
MODES = {
    "projects/configs/PETRv1/focal_petrv1_r50_flash_704_24e.py": "single_frame",
    "projects/configs/PETRv1/petrv1_r50_flash_704_24e.py": "single_frame",
    "projects/configs/RepDETR3D/repdetr3d_eva02_800_bs2_seq_24e.py": "streaming",
    "projects/configs/RepDETR3D/repdetr3d_vov_800_bs2_seq_24e.py": "streaming",
    "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py": "sliding_window",
    "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py": "streaming",
    "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_428q_nui_24e.py": "streaming",
    "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_428q_nui_60e.py": "streaming",
    "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_90e.py": "streaming",
    "projects/configs/StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py": "streaming",
    # use_valid_flag left at its default (False): upstream masks boxes by num_lidar_pts, which the
    # loader's frames do not carry
    "projects/configs/test_speed/stream_petr_r50_704_bs2_seq_428q_nui_speed_test.py": "refused: "
    "data.train.use_valid_flag=False",
}


@pytest.fixture(scope="module")
def upstream() -> None:
    from equivalence.original import import_upstream

    import_upstream()


@pytest.fixture(scope="module")
def partly_unlabelled(synthetic_dataset: Path, tmp_path_factory) -> Path:
    """The synthetic train set with every box of its first scene invalid (frames without labels:
    ``filter_empty_gt`` replaces them). Images are linked, not copied."""
    root = tmp_path_factory.mktemp("unlabelled")
    for entry in synthetic_dataset.iterdir():
        if entry.suffix != ".pkl":
            (root / entry.name).symlink_to(entry)
    for pkl in synthetic_dataset.glob("*.pkl"):
        shutil.copy(pkl, root / pkl.name)
    path = root / "nuscenes2d_temporal_infos_train.pkl"
    data = pickle.loads(path.read_bytes())
    first = min(data["infos"], key=lambda i: i["timestamp"])["scene_token"]
    for info in data["infos"]:
        if info["scene_token"] == first:
            info["valid_flag"] = np.zeros_like(info["valid_flag"])
    path.write_bytes(pickle.dumps(data))
    return root


def test_every_training_config_of_the_pin_selects_its_mode(upstream, synthetic_dataset) -> None:
    from dali_streampetr.config.reader import loader_config_from
    from dali_streampetr.settings import UnsupportedConfigError
    from equivalence.configs import upstream_configs
    from equivalence.original import load_config, streampetr_target

    configs = upstream_configs(streampetr_target())
    assert configs == sorted(MODES)
    got = {}
    for config in configs:
        try:
            got[config] = loader_config_from(load_config(config, synthetic_dataset)).mode.name
        except UnsupportedConfigError as exc:
            got[config] = f"refused: {str(exc).split(' is not reproduced')[0]}"
    assert got == MODES


def _compare(cfg: Any, root: Path, batches: int, seed: int) -> dict[str, Any]:
    from dali_streampetr.config.reader import loader_config_from
    from equivalence.harness import compare_batches

    return compare_batches(cfg, loader_config_from(cfg), root, batches=batches, seed=seed, log=print)


def _assert_equivalent(record: dict[str, Any]) -> None:
    assert record["structure_diffs"] == []
    assert record["batch_order"]["equal"], record["batch_order"]
    bad = {k: v for k, v in record["fields"].items() if not v["ok"]}
    assert not bad and record["ok"], bad


def test_petrv1_batches_match_upstream_with_replacements(upstream, partly_unlabelled) -> None:
    """Single frame: upstream's sampler order, prev_exists False, and the frames without labels
    replaced (the replacement replayed into upstream's _rand_another, checked against its pool)."""
    from equivalence.original import load_config

    cfg = load_config("petrv1", partly_unlabelled, samples_per_gpu=2)
    record = _compare(cfg, partly_unlabelled, batches=4, seed=1)
    _assert_equivalent(record)
    assert {f["prev_exists"] for f in record["frames"]} == {False}


def test_petrv1_replacements_are_upstreams_rand_another(upstream, partly_unlabelled) -> None:
    """Each replacement is what upstream's own ``_rand_another`` returns with ``np.random`` seeded
    as the DALI sample's generator (the same ``np.random.choice`` over the same pool)."""
    from dali_streampetr.loader import build_loader
    from dali_streampetr.sampling.plan import queue_seed
    from equivalence.original import load_config, original_dataset

    cfg = load_config("petrv1", partly_unlabelled, samples_per_gpu=2)
    dataset = original_dataset(cfg)
    loader = build_loader(cfg, partly_unlabelled, seed=1)
    replaced = 0
    for it in range(3 * len(loader)):
        for plan in loader.planner.plan(it):
            if not plan.rejected:
                continue
            np.random.seed(queue_seed(1, 0, it, plan.slot))
            assert [int(dataset._rand_another(i)) for i in plan.rejected] == [*plan.rejected[1:], plan.index]
            replaced += 1
    assert replaced >= 3


def test_8key_batches_match_upstream_on_the_time_axis(upstream, synthetic_dataset) -> None:
    """Sliding window: 8 frames per sample, each through upstream's pipeline with its own draw."""
    from equivalence.original import load_config

    cfg = load_config("8key", synthetic_dataset)
    record = _compare(cfg, synthetic_dataset, batches=2, seed=3)
    _assert_equivalent(record)
    assert record["counts"]["original"]["boxes3d"] > 0


@pytest.mark.parametrize("replicate", [False, True])
@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("batch", [1, 2])
def test_epoch_sampler_matches_upstream_over_epochs(upstream, replicate, world_size, batch) -> None:
    """37 frames (padding on every world size), 5 epochs: upstream's DistributedGroupSampler as the
    plugin's build_dataloader builds it for rank r of W, set_epoch before each epoch."""
    from dali_streampetr.sampling.samplers import GroupEpochSampler
    from equivalence.sequence import FlagsOnly, Run, original_epoch_indices

    flags = np.zeros(37, dtype=np.int64)
    for rank in range(world_size):
        want = original_epoch_indices(
            FlagsOnly(flags), batch, Run(rank, world_size, 11, replicate, False, 0), 5
        )
        ours = GroupEpochSampler(flags, batch, rank=rank, world_size=world_size, seed=11,
                                 replicate=replicate)  # fmt: skip
        assert len(ours) * 5 == len(want)
        assert [ours.batch(i) for i in range(len(want))] == want, (world_size, rank)


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_8key_queues_match_upstream_over_many_iterations(upstream, synthetic_dataset, world_size) -> None:
    """The 8-key config's index lists, 3 epochs of every rank: upstream's sampler, then upstream's
    own prepare_train_data (random.shuffle, drop, sort, clamp, prev_exists by scene) with ``random``
    seeded as the DALI sample's generator. Images and the pipeline are left out (get_data_info and
    the pipeline stubbed)."""
    import random

    from dali_streampetr.loader import build_loader
    from dali_streampetr.sampling.plan import queue_seed
    from equivalence.original import load_config, original_dataset
    from equivalence.sequence import Run, original_epoch_indices

    cfg = load_config("8key", synthetic_dataset)
    dataset = original_dataset(cfg)
    scenes = [info["scene_token"] for info in dataset.data_infos]
    dataset.get_data_info = lambda i: {"scene_token": scenes[i], "index": i}
    dataset.pre_pipeline = lambda d: None
    dataset.pipeline = lambda d: d
    dataset.union2one = lambda queue: [(q["index"], q["prev_exists"]) for q in queue]
    for rank in range(world_size):
        want = original_epoch_indices(dataset, 1, Run(rank, world_size, 2, False, False, 0), epochs=3)
        loader = build_loader(cfg, synthetic_dataset, rank=rank, world_size=world_size, seed=2)
        for it, (index,) in enumerate(want):
            random.seed(queue_seed(2, rank, it, 0))
            ours = [(p.index, p.prev_exists) for p in loader.planner.plan(it)]
            assert ours == dataset.prepare_train_data(index), (world_size, rank, it)


def test_epoch_based_configs_need_a_process_group(upstream, synthetic_dataset) -> None:
    """Without one, upstream samples with mmdet's GroupSampler from the main process's np.random:
    refused by name before anything is built; streaming configs are unaffected."""
    import torch.distributed as dist
    from dali_streampetr.config.reader import loader_config_from
    from dali_streampetr.runner.dataloader import require_distributed_for
    from dali_streampetr.settings import UnsupportedConfigError
    from equivalence.original import load_config

    def mode(name: str):
        return loader_config_from(load_config(name, synthetic_dataset)).mode

    assert not dist.is_initialized()
    for name in ("petrv1", "8key"):
        with pytest.raises(UnsupportedConfigError, match="launch distributed, also for one process"):
            require_distributed_for(mode(name))
    require_distributed_for(mode("r50"))
