"""What a checkpoint stores of the DALI loader, and which stored states a resumed run accepts."""

from __future__ import annotations

import pytest
from dali_streampetr.loader import build_loader
from dali_streampetr.resume import CHECKED, FIELD, FIELDS, LoaderStateMismatch, check_state, fitting_state
from loader_data import tiny_config

CKPT = "work/iter_4.pth"


@pytest.fixture(scope="module")
def states(tiny_root):
    """The states of ranks 0 and 1 of a 2-process shard run after 3 batches, and of rank 0 alone."""
    out = {}
    for key, (rank, world, dlc) in {
        "r0": (0, 2, {}),
        "r1": (1, 2, {}),
        "solo": (0, 1, {}),
        "replicate": (0, 2, {"replicate_dataset_per_gpu": True}),
    }.items():
        with build_loader(tiny_config(**dlc), tiny_root, rank=rank, world_size=world, seed=3) as loader:
            loader.iteration = 3  # the position a checkpoint after 3 iterations records
            out[key] = loader.state_dict()
    return out


def test_a_fitting_state_resumes_each_rank_at_the_runners_iteration(states) -> None:
    stored = {"ranks": [states["r0"], states["r1"]]}
    mine = {**states["r1"], "iteration": 0}  # a fresh loader of rank 1
    assert fitting_state(stored, mine, iteration=3, checkpoint=CKPT) == {**states["r1"], "iteration": 3}


def test_another_world_size_is_refused_with_the_way_out(states) -> None:
    with pytest.raises(LoaderStateMismatch) as err:
        fitting_state({"ranks": [states["r0"], states["r1"]]}, states["solo"], iteration=3, checkpoint=CKPT)
    text = str(err.value)
    assert "2 rank(s)" in text and "world_size 1" in text and "--gpus/--nproc_per_node 2" in text
    assert f"load_from={CKPT}" in text


def test_another_mode_is_refused_naming_the_field(states) -> None:
    stored = {"ranks": [states["replicate"], states["r1"]]}
    with pytest.raises(LoaderStateMismatch, match="mode is 'replicate' in the checkpoint, 'shard' here"):
        fitting_state(stored, states["r0"], iteration=3, checkpoint=CKPT)


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("seed", 4, "--seed 4"),
        ("samples_per_gpu", 1, "data.samples_per_gpu=1"),
        ("data", "0" * 40, "data.train.ann_file"),
        ("frames", 7, "data.train.ann_file"),
    ],
)
def test_other_data_seed_or_batch_are_refused(states, field: str, value, hint: str) -> None:
    stored = {"ranks": [{**states["r0"], field: value}, states["r1"]]}
    with pytest.raises(LoaderStateMismatch, match=f"{field} is") as err:
        fitting_state(stored, states["r0"], iteration=3, checkpoint=CKPT)
    assert hint in str(err.value)


def test_the_data_fingerprint_follows_the_info_file(states, tiny_root) -> None:
    with build_loader(tiny_config(), tiny_root, rank=0, world_size=2, seed=3) as loader:
        loader.frames = loader.frames[:-1]  # another info file: one frame less
        assert loader.state_dict()["data"] != states["r0"]["data"]


def test_the_state_holds_every_field_of_the_schema(states) -> None:
    assert list(states["r0"]) == [f.name for f in FIELDS]


@pytest.mark.parametrize("field", [f.name for f in CHECKED])
def test_every_checked_field_is_compared_and_its_fix_printed(states, field: str) -> None:
    theirs = {**states["r0"], field: "other"}
    with pytest.raises(LoaderStateMismatch, match=f"{field} is 'other' in the state") as err:
        check_state(theirs, states["r0"])
    assert FIELD[field].fix.split("{")[0] in str(err.value)


def test_a_state_before_a_field_existed_counts_as_that_fields_old_value(states) -> None:
    old = {k: v for k, v in states["solo"].items() if k not in ("training_mode", "batches_per_epoch")}
    check_state(old, states["solo"])  # a streaming state without the fields added with the modes


def test_load_state_dict_refuses_another_stream_with_the_same_check(tiny_root) -> None:
    with build_loader(tiny_config(), tiny_root, seed=3) as loader:
        state = loader.state_dict()
        with pytest.raises(LoaderStateMismatch, match="seed is 7 in the state, 3 here. pass --seed 7"):
            loader.load_state_dict({**state, "seed": 7, "iteration": 5})
        assert loader.iteration == 0
        loader.load_state_dict({**state, "iteration": 5, "epoch": 99})  # the epoch is a record only
        assert loader.iteration == 5
