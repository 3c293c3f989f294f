"""The DALI test loader's split between ranks (``data_loading_config.test_sharding``). With ``'scenes'``
each rank walks whole scenes (``eval_shards.scene_shards`` of the frame store's scene column): the
ranks together give every frame once, in dataset order, and no rank starts inside a scene; a rank
without a scene ends its pass at once and starts no worker; the sampler yields the rank's dataset
indices (``tools/test.py``'s gather places results by them). The default follows
``use_dali_pipeline`` as upstream's DataLoader's does, ``'upstream'`` by name gives upstream's chunks,
and a bad value is refused by key for every split. Faults on a scene shard behave as on upstream's
chunk: a dead worker's retry is the same frame; a bad image is served black and listed, in dataset
order. Upstream's chunks themselves: tests/loader/test_loader_test_split.py."""

from __future__ import annotations

import os
import shutil
import signal

import pytest
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.pipeline_errors import BadImageError, WorkerDiedError
from dali_streampetr.settings import ConfigValueError
from loader_data import tiny_config, tiny_eval_config, write_eval_infos

# The 11 frames of write_eval_infos: scenes 0-3, 4-7 and 8-10 (boundaries 0, 4, 8, 11). Each rank ends
# where the ideal cut r * 11 / K moves to the nearest boundary (a tie: the earlier), worked out by hand:
# K=2: 5.5 -> 4; K=3: 3.7 -> 4, 7.3 -> 8; K=4: 2.75 -> 4, 5.5 -> 4, 8.25 -> 8 (rank 1 holds no scene);
# K=5: 2.2 -> 4, 4.4 -> 4, 6.6 -> 8, 8.8 -> 8.
SCENE_A, SCENE_B, SCENE_C = list(range(4)), list(range(4, 8)), list(range(8, 11))
SCENE_SHARDS = {
    1: [SCENE_A + SCENE_B + SCENE_C],
    2: [SCENE_A, SCENE_B + SCENE_C],
    3: [SCENE_A, SCENE_B, SCENE_C],
    4: [SCENE_A, [], SCENE_B, SCENE_C],
    5: [SCENE_A, [], SCENE_B, [], SCENE_C],
}
BAD_SHARDING = r"data_loading_config.test_sharding='scene': one of \['scenes', 'upstream'\]"


@pytest.fixture(scope="module")
def eval_root(tiny_root):
    write_eval_infos(tiny_root)  # 11 frames: no multiple of 2 or 3
    return tiny_root


def dali_config(**dlc) -> dict:
    """The tiny test config as a DALI config (``use_dali_pipeline=True``: scene shards by default)."""
    return {**tiny_eval_config(**dlc), "use_dali_pipeline": True}


def indices(batches: list[dict]) -> list[int]:
    return [b["dali"][0]["index"] for b in batches]


@pytest.mark.parametrize("world_size", sorted(SCENE_SHARDS))
def test_each_rank_walks_its_whole_scenes_and_the_ranks_give_every_frame_once(eval_root, world_size):
    """Each rank's batches are its scenes, one frame per batch, as its sampler yields them and
    ``len`` counts them; each rank starts at a scene's first frame (the model's memory starts fresh,
    as in one process); in rank order every frame once, in dataset order."""
    walked = []
    for rank in range(world_size):
        with build_loader(dali_config(), eval_root, rank=rank, world_size=world_size, split="test") as loader:
            assert loader.cfg.mode.sharding == "scenes"
            batches = list(loader)
            assert indices(batches) == list(loader.sampler) == SCENE_SHARDS[world_size][rank]
            assert len(loader) == len(batches)
            scenes = [b["img_metas"][0][0]["scene_token"] for b in batches]
            if batches:
                assert batches[0]["dali"][0]["index"] in (0, 4, 8), "a rank starts where a scene starts"
                assert scenes == [loader.frames[i].scene_token for i in indices(batches)]
        walked += indices(batches)
    assert walked == list(range(11))


def test_a_rank_without_a_scene_ends_its_pass_at_once_and_starts_no_worker(eval_root):
    """Rank 1 of 4 holds no scene: every pass is empty at once (no modulo by its length of 0), with
    the worker processes' setting on, none is started; the loader stays usable pass after pass."""
    cfg = dali_config(py_num_workers=1)
    with build_loader(cfg, eval_root, rank=1, world_size=4, split="val") as loader:
        assert len(loader) == 0 and list(loader.sampler) == []
        for _ in range(2):
            it = iter(loader)
            with pytest.raises(StopIteration):
                next(it)
            assert loader.worker_pids() == []
        assert list(loader) == []


def test_the_default_follows_use_dali_pipeline_and_the_key_wins():
    """As upstream's DataLoader reads it (``eval_shards.sharding_of``): scene shards for a DALI
    config, upstream's chunks for the others (also when only the test loader is DALI's), the key
    given by name wins, for both test splits."""
    for split in ("test", "val"):
        assert loader_config_from(dali_config(), split).mode.sharding == "scenes"
        assert loader_config_from(tiny_eval_config(), split).mode.sharding == "upstream"
        test_only = {**tiny_eval_config(), "use_dali_test_pipeline": True}
        assert loader_config_from(test_only, split).mode.sharding == "upstream"
        named = dali_config(test_sharding="upstream")
        assert loader_config_from(named, split).mode.sharding == "upstream"
        assert loader_config_from(tiny_eval_config(test_sharding="scenes"), split).mode.sharding == "scenes"


def test_upstream_by_name_on_a_dali_config_walks_upstreams_chunk(eval_root):
    """``test_sharding='upstream'`` reproduces upstream's numbers: rank 1 of 2 walks frames 6..10
    and wraps around to frame 0, cutting scene 4-7 at frame 6."""
    cfg = dali_config(test_sharding="upstream")
    with build_loader(cfg, eval_root, rank=1, world_size=2, split="test") as loader:
        assert indices(list(loader)) == list(loader.sampler) == [6, 7, 8, 9, 10, 0]


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_bad_test_sharding_is_refused_by_key_for_every_split(split):
    """A training run stops before it trains, not at its first evaluation; the unknown-key refusal
    lists the key among the known ones."""
    cfg = tiny_config(test_sharding="scene") if split == "train" else dali_config(test_sharding="scene")
    with pytest.raises(ConfigValueError, match=BAD_SHARDING):
        loader_config_from(cfg, split)
    with pytest.raises(
        ConfigValueError, match=r"unknown data_loading_config keys: \['test_shards'\] .*'test_sharding'"
    ):
        loader_config_from(tiny_config(test_shards="scenes"), split)


def test_a_dead_worker_on_a_scene_shard_raises_by_name_and_the_retry_is_the_same_frame(eval_root):
    """Rank 1 of 2 (scenes 4-7 and 8-10): its worker SIGKILLed after the first frame; the error
    names it, and the rebuilt pipeline continues at the failed frame: none lost, none twice."""
    cfg = dali_config(py_num_workers=1, batch_timeout_s=20)
    with build_loader(cfg, eval_root, rank=1, world_size=2, split="test") as loader:
        it = iter(loader)
        seen = [next(it)["dali"][0]["index"]]
        (pid,) = loader.worker_pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerDiedError, match=f"pid {pid} killed by SIGKILL"):
            for _ in range(20):
                seen.append(next(it)["dali"][0]["index"])
        rest = indices(list(it))
    assert seen + rest == SCENE_B + SCENE_C


def test_bad_images_on_scene_shards_are_served_black_and_listed_in_dataset_order(eval_root, tmp_path):
    """Frames 9, 2 and 5 each with one unreadable camera, on 2 ranks (scenes 0-3; 4-7 and 8-10): with
    ``on_bad_image='raise'`` the rank stops naming the sample and camera; with ``'skip'`` each rank
    lists its frames served black in its walking order, and the ranks' lists in rank order are
    frames 2, 5, 9: dataset order."""
    root = tmp_path / "data"
    shutil.copytree(eval_root, root)
    with build_loader(dali_config(), root, split="test") as loader:
        frames = {i: loader.frames[i] for i in (9, 2, 5)}
    for frame in frames.values():
        with open(frame.img_paths[1], "wb") as f:
            f.write(b"not a jpeg")
    first = build_loader(dali_config(), root, rank=0, world_size=2, split="test")
    with (
        first,
        pytest.raises(BadImageError, match=f"sample {frames[2].token}, camera {frames[2].cam_names[1]}"),
    ):
        list(first)
    listed = []
    for rank in range(2):
        cfg = dali_config(on_bad_image="skip")
        with build_loader(cfg, root, rank=rank, world_size=2, split="test") as loader:
            batches = list(loader)
        assert indices(batches) == SCENE_SHARDS[2][rank]
        listed.append(
            [
                (b["dali"][0]["index"], b["dali"][0]["bad_cameras"])
                for b in batches
                if b["dali"][0]["bad_cameras"]
            ]
        )
    assert listed == [
        [(2, [frames[2].cam_names[1]])],
        [(5, [frames[5].cam_names[1]]), (9, [frames[9].cam_names[1]])],
    ]
