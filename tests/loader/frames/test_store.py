"""The frame store: the same frames and batches as the pickle's, built once per node, never trusted
when damaged, and never half-written."""

from __future__ import annotations

import fcntl
import logging
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from bit_for_bit import assert_same, assert_same_frames
from dali_streampetr.frames.frame_errors import InfoFileChanged
from dali_streampetr.frames.store import load_frames, read_frames, store_folder, store_key, store_path
from dali_streampetr.frames.store_build import build_store
from dali_streampetr.frames.store_file import PREFIX
from dali_streampetr.loader import build_loader
from dali_streampetr.sampling.plan import labelled_frames, scene_ids
from loader_data import CLASSES, own_infos, tiny_config
from loaderbench.nuscenes_size.replica import replicate

OVERLAY = Path(__file__).resolve().parents[3] / "overlay"


@pytest.fixture
def quirky_pickle(tiny_root, tmp_path) -> Path:
    """The tiny infos with upstream's quirks: a frame without valid boxes (float64 labels), empty 2D
    arrays of shape (0,), (0, 4) and a plain empty list."""
    with (tiny_root / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        data = pickle.load(f)
    infos = {info["token"]: info for info in data["infos"]}
    infos["s0f0"]["valid_flag"] = np.zeros_like(infos["s0f0"]["valid_flag"])
    empties = (np.zeros(0, np.float32), np.zeros((0, 4), np.float32), [])
    for cam, empty in enumerate(empties):
        for key in ("bboxes2d", "centers2d", "labels2d", "depths"):
            infos["s0f1"][key][cam] = empty
    path = tmp_path / "quirky.pkl"
    path.write_bytes(pickle.dumps(data))
    return path


def test_store_frames_equal_the_pickles_bit_for_bit(tiny_root, quirky_pickle, synthetic_dataset, tmp_path):
    """Every attribute of every frame: type, dtype, shape and bytes, on the hand-made infos with their
    quirks, the synthetic converter output and a 3-fold replica of it."""
    assert_same_frames(
        read_frames(quirky_pickle, tiny_root, CLASSES), load_frames(quirky_pickle, tiny_root, CLASSES)
    )
    frames = {f.token: f for f in load_frames(quirky_pickle, tiny_root, CLASSES)}
    assert frames["s0f0"].gt_labels.dtype == np.float64 and frames["s0f0"].gt_boxes.shape == (0, 9)
    assert [a.shape for a in frames["s0f1"].bboxes2d[:3]] == [(0,), (0, 4), (0,)]
    train = synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl"
    with train.open("rb") as f:
        grown = replicate(pickle.load(f), 3 * 8 + 5)
    replica = tmp_path / "replica.pkl"
    replica.write_bytes(pickle.dumps(grown, protocol=2))
    for ann in (train, replica):
        assert_same_frames(
            read_frames(ann, synthetic_dataset, CLASSES), load_frames(ann, synthetic_dataset, CLASSES)
        )


def test_frames_are_read_only_views_of_one_mapped_file(tiny_root):
    ann = tiny_root / "nuscenes2d_temporal_infos_train.pkl"
    frames = load_frames(ann, tiny_root, CLASSES)
    path, _ = frames.source
    assert path.parent == store_folder() and path.is_file()
    boxes = frames[2].gt_boxes
    assert not boxes.flags.writeable and isinstance(boxes.base, np.ndarray)
    with pytest.raises(ValueError, match="read-only"):
        boxes[0, 0] = 1.0
    mapped = [line for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path))]
    assert mapped and all(line.split()[1].startswith("r--") for line in mapped)  # read-only, shared
    assert len(pickle.dumps(frames)) < 8192  # a spawned worker maps the file again
    assert_same_frames(list(frames), pickle.loads(pickle.dumps(frames)))
    assert [f.token for f in frames[1:3]] == [frames[1].token, frames[2].token]


def test_one_build_per_key_then_every_load_maps_it(tiny_root, tmp_path, monkeypatch):
    ann = own_infos(tiny_root, tmp_path)
    trace = tmp_path / "trace"
    monkeypatch.setenv("STREAMPETR_DALI_TEST_TRACE", str(trace))
    first = load_frames(ann, tiny_root, CLASSES).source[0]
    again = load_frames(ann, tiny_root, CLASSES).source[0]
    assert first == again and trace.read_text().count("frame-store:published") == 1
    other_classes = load_frames(ann, tiny_root, CLASSES[:5]).source[0]
    assert other_classes != first and load_frames(ann, tiny_root, CLASSES[:5])[0].gt_labels.max() < 5
    with ann.open("rb") as f:
        data = pickle.load(f)
    data["infos"] = data["infos"][:-1]
    ann.write_bytes(pickle.dumps(data))  # the same path, other content
    changed = load_frames(ann, tiny_root, CLASSES)
    assert changed.source[0] not in (first, other_classes) and len(changed) == len(data["infos"])
    assert trace.read_text().count("frame-store:published") == 3


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 100)


def _flip_data_byte(path: Path) -> None:
    with path.open("r+b") as f:
        f.seek(path.stat().st_size - 5000)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))


def _garble_header(path: Path) -> None:
    with path.open("r+b") as f:
        f.seek(PREFIX)  # the first bytes of the JSON header
        f.write(b"{{{{")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(_truncate, "truncated"), (_flip_data_byte, "checksum"), (_garble_header, "damaged header"),
     (None, "another key")],
)  # fmt: skip
def test_a_damaged_or_foreign_store_is_rebuilt_with_one_warning(tiny_root, tmp_path, caplog, damage, reason):
    ann = own_infos(tiny_root, tmp_path)
    reference = read_frames(ann, tiny_root, CLASSES)
    path = load_frames(ann, tiny_root, CLASSES).source[0]
    if damage is None:  # a store of other class names under this key's name
        other = load_frames(ann, tiny_root, CLASSES[:3]).source[0]
        os.replace(other, path)
    else:
        damage(path)
    with caplog.at_level(logging.INFO, logger="dali_streampetr"):
        frames = load_frames(ann, tiny_root, CLASSES)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and reason in warnings[0] and str(path) in warnings[0], warnings
    assert_same_frames(reference, frames)
    caplog.clear()
    load_frames(ann, tiny_root, CLASSES)
    assert not caplog.records  # the rebuilt store is trusted again


LOAD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {overlay!r})
    from dali_streampetr.frames.store import load_frames
    frames = load_frames({ann!r}, {root!r}, {classes!r})
    print(len(frames), frames[len(frames) - 1].token)
    """
)


def _load_in_process(ann: Path, root: Path, env: dict[str, str]) -> subprocess.Popen:
    code = LOAD.format(overlay=str(OVERLAY), ann=str(ann), root=str(root), classes=list(CLASSES))
    return subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, **env}, stdout=subprocess.PIPE, text=True
    )


def test_ranks_starting_together_build_the_store_once(synthetic_dataset, tmp_path):
    """Two ranks find no store; the test holds the build lock until both wait for it: one builds,
    the other maps what it built."""
    ann = tmp_path / "infos.pkl"
    with (synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        ann.write_bytes(pickle.dumps(replicate(pickle.load(f), 400), protocol=2))
    lock = store_path(store_folder(), store_key(ann.absolute(), CLASSES, False)).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    trace = tmp_path / "trace"
    env = {"STREAMPETR_DALI_TEST_TRACE": str(trace)}
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        ranks = [_load_in_process(ann, synthetic_dataset, env) for _ in range(2)]
        deadline = time.monotonic() + 120
        while len(_waiting_on(lock)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_waiting_on(lock)) == 2
    outputs = [p.communicate(timeout=300)[0] for p in ranks]
    assert (
        [p.returncode for p in ranks] == [0, 0] and outputs[0] == outputs[1] and outputs[0].startswith("400 ")
    )
    steps = trace.read_text().splitlines()
    assert steps.count("frame-store:lock") == 2 and steps.count("frame-store:columns") == 1


def _waiting_on(lock: Path) -> list[int]:
    """Pids of the processes that have ``lock`` open (the builders waiting for it)."""
    pids = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == str(lock) for fd in fd_dir.iterdir()):
                pids.append(int(fd_dir.parent.name))
        except OSError:
            continue
    return [p for p in pids if p != os.getpid()]


@pytest.mark.parametrize("step", ["frame-store:columns", "frame-store:gt_boxes", "frame-store:written"])
def test_a_killed_build_leaves_no_half_store_and_the_rerun_builds_it(tiny_root, tmp_path, step):
    ann = own_infos(tiny_root, tmp_path)
    before = set(store_folder().iterdir())
    killed = _load_in_process(ann, tiny_root, {"STREAMPETR_DALI_TEST_KILL_AT": step})
    killed.communicate(timeout=120)
    assert killed.returncode != 0
    left = {p for p in set(store_folder().iterdir()) - before if not p.name.endswith(".lock")}
    assert not [p for p in left if p.name.endswith(".frames")]  # no store, at most a temp file
    frames = load_frames(ann, tiny_root, CLASSES)
    assert_same_frames(read_frames(ann, tiny_root, CLASSES), frames)
    after = {p for p in set(store_folder().iterdir()) - before if not p.name.endswith(".lock")}
    assert after == {frames.source[0]}  # the rerun removed what the killed build left


def test_an_unwritable_store_folder_keeps_the_frames_in_the_process(tiny_root, tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("STREAMPETR_DALI_FRAME_STORES", str(blocked / "stores"))
    ann = tiny_root / "nuscenes2d_temporal_infos_train.pkl"
    with caplog.at_level(logging.WARNING, logger="dali_streampetr"):
        frames = load_frames(ann, tiny_root, CLASSES)
    assert frames.source is None and "cannot write the frame store" in caplog.text
    assert_same_frames(read_frames(ann, tiny_root, CLASSES), frames)


@pytest.mark.parametrize("workers", [0, 1])
def test_batches_equal_the_pickle_frames_batches_bit_for_bit(tiny_root, workers):
    """The whole loader (the external source in this process, or in its forked worker) gives the same
    batches from the store as from the frames read straight from the pickle (the former code path)."""
    cfg = tiny_config(py_num_workers=workers)
    with build_loader(cfg, tiny_root, seed=5) as stored, build_loader(cfg, tiny_root, seed=5) as pickled:
        assert stored.frames.source is not None
        pickled.frames = read_frames(
            tiny_root / "nuscenes2d_temporal_infos_train.pkl", tiny_root, CLASSES
        )  # before the first batch builds the pipeline
        for _ in range(6):
            a, b = next(stored), next(pickled)
            assert_same(
                {k: v for k, v in a.items() if k != "dali"}, {k: v for k, v in b.items() if k != "dali"}
            )
            assert [d["index"] for d in a["dali"]] == [d["index"] for d in b["dali"]]


@pytest.mark.parametrize("bev", [51.2, 12.0, 4.0])
def test_whole_set_facts_of_the_store_equal_the_per_frame_ones(
    tiny_root, quirky_pickle, synthetic_dataset, bev
):
    """Which frames keep a box after the range and name filters, and the scene numbering: read
    column-wise from the store as frame by frame from the pickle's records."""
    pcr = (-bev, -bev, -5.0, bev, bev, 3.0)
    for ann, root in ((quirky_pickle, tiny_root), (synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl",
                                                    synthetic_dataset)):  # fmt: skip
        store, records = load_frames(ann, root, CLASSES), read_frames(ann, root, CLASSES)
        for num_classes in (len(CLASSES), 2):  # 2: ObjectNameFilter drops labels 2..9 as well
            want = labelled_frames(records, pcr, num_classes)
            assert (labelled_frames(store, pcr, num_classes) == want).all()
        assert (scene_ids(store) == scene_ids(records)).all()
    assert not want.all() or bev == 51.2  # the narrow ranges drop every box of some frames


def test_an_info_file_that_changed_since_its_key_was_made_gives_no_store(tiny_root, tmp_path):
    """The builder hashes the bytes it unpickles: content other than the key's is refused."""
    ann = own_infos(tiny_root, tmp_path)
    key = store_key(ann, CLASSES, False)
    path = store_path(tmp_path / "stores", key)
    with ann.open("rb") as f:
        data = pickle.load(f)
    data["infos"] = data["infos"][:-1]
    ann.write_bytes(pickle.dumps(data))  # after the key was made, before the build reads it
    with pytest.raises(InfoFileChanged, match="changed while its frame store was built"):
        build_store(ann, CLASSES, False, path, key)
    assert not [p for p in path.parent.iterdir() if not p.name.endswith(".lock")]
