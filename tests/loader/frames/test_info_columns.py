"""The vectorised conversion of an info file into frame-store columns: the per-frame reference's
columns bit for bit, on the converter's output, on random poses and on upstream's quirks; any other
value type takes the per-frame path."""

from __future__ import annotations

import copy
import gc
import hashlib
import pickle
from pathlib import Path

import numpy as np
import pytest
from dali_streampetr.frames import info_columns
from dali_streampetr.frames.columns import to_columns
from dali_streampetr.frames.records import frame_records, sorted_infos
from dali_streampetr.frames.unpickle import read_pickle_file
from loader_data import CLASSES


def per_frame_columns(data: dict) -> tuple[dict, dict]:
    return to_columns(frame_records(sorted_infos(data, "test"), CLASSES))


def assert_same_columns(got: tuple[dict, dict], want: tuple[dict, dict]) -> None:
    """Same column names in the same order, dtypes, shapes and bytes; same meta."""
    assert list(got[0]) == list(want[0])
    for name, arr in want[0].items():
        other = got[0][name]
        assert (other.dtype, other.shape) == (arr.dtype, arr.shape), name
        assert other.tobytes() == arr.tobytes(), name
    assert got[1] == want[1]


def _quaternion(rng: np.random.Generator, kind: int) -> list[float]:
    q = rng.normal(size=4)
    if kind == 0:  # unit length up to rounding: not normalised again
        q /= np.linalg.norm(q)
    elif kind == 1:  # exactly the zero quaternion: left as is
        q[:] = 0.0
    return [float(e) for e in q]  # else: far from unit length, normalised


def randomised(data: dict, copies: int, seed: int = 0) -> dict:
    """``copies`` copies of the infos with random poses, calibrations and boxes (magnitudes of
    nuScenes: km translations, degenerate quaternions), shuffled timestamps with ties, frames
    without boxes and empty 2D annotations of every shape upstream passes through."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(copies):
        for info in data["infos"]:
            info = copy.deepcopy(info)
            info["token"] = f"{info['token']}-{c}"
            info["timestamp"] = int(rng.integers(0, 40)) * 500_000 + 1_600_000_000_000_000
            info["ego2global_rotation"] = _quaternion(rng, int(rng.integers(0, 4)))
            info["lidar2ego_rotation"] = np.array(_quaternion(rng, 0))  # an array, as some converters
            info["ego2global_translation"] = [float(e) for e in rng.uniform(-2000, 2000, 3)]
            for cam in info["cams"].values():
                cam["sensor2lidar_rotation"] = rng.normal(size=(3, 3))
                cam["sensor2lidar_translation"] = rng.uniform(-3, 3, 3)
                cam["cam_intrinsic"] = rng.uniform(0, 1600, (3, 3)).astype(np.float32)
            n = len(info["gt_boxes"])
            info["gt_boxes"] = info["gt_boxes"] + rng.normal(size=(n, 7)) * 100
            info["valid_flag"] = rng.random(n) < 0.8
            if rng.random() < 0.1:  # no boxes: upstream's float64 np.array([]) names
                info["gt_boxes"], info["gt_velocity"] = np.zeros((0, 7)), np.zeros((0, 2))
                info["gt_names"], info["valid_flag"] = np.array([]), np.array([], dtype=bool)
            for cam in range(len(info["cams"])):
                if rng.random() < 0.3:
                    empties = [np.zeros(0, np.float32), np.zeros((0, 4), np.float32), []]
                    empty = empties[int(rng.integers(0, 3))]
                    for key in ("bboxes2d", "centers2d", "labels2d", "depths"):
                        info[key][cam] = empty
            out.append(info)
    return {**data, "infos": out}


def test_converter_output_gives_the_per_frame_columns_bit_for_bit(synthetic_dataset):
    for split in ("train", "val"):
        with (synthetic_dataset / f"nuscenes2d_temporal_infos_{split}.pkl").open("rb") as f:
            data = pickle.load(f)
        assert_same_columns(info_columns._columns(data, CLASSES), per_frame_columns(data))


def test_random_poses_and_quirks_give_the_per_frame_columns_bit_for_bit(synthetic_dataset):
    """The stacked products must run the BLAS routines ``np.dot`` runs per frame, on the same
    layouts: a transposed view instead of a C-ordered copy changes the last bit of ~1/3 of the
    camera translations."""
    with (synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        data = randomised(pickle.load(f), copies=40)
    assert_same_columns(info_columns._columns(data, CLASSES), per_frame_columns(data))


def _numpy_timestamp(info: dict) -> None:
    info["timestamp"] = np.int64(info["timestamp"])


def _nested_list_intrinsic(info: dict) -> None:
    cam = next(iter(info["cams"].values()))
    cam["cam_intrinsic"] = cam["cam_intrinsic"].tolist()


def _path_object(info: dict) -> None:
    cam = next(iter(info["cams"].values()))
    cam["data_path"] = Path(cam["data_path"])


def _integer_boxes(info: dict) -> None:
    info["gt_boxes"] = np.round(info["gt_boxes"]).astype(np.int64)


@pytest.mark.parametrize("change", [_numpy_timestamp, _nested_list_intrinsic, _path_object, _integer_boxes])
def test_other_value_types_take_the_per_frame_path(synthetic_dataset, change):
    with (synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        data = pickle.load(f)
    change(data["infos"][3])
    with pytest.raises(info_columns._PerFrame):
        info_columns._columns(data, CLASSES)
    assert_same_columns(info_columns.info_columns(data, CLASSES), per_frame_columns(data))


def test_one_read_gives_the_pickle_and_the_sha256_of_its_bytes(synthetic_dataset):
    path = synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl"
    data, sha256 = read_pickle_file(path, trusted=False)
    assert sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    with path.open("rb") as f:
        assert pickle.dumps(data) == pickle.dumps(pickle.load(f))
    assert gc.isenabled()  # paused only while reading
