"""Info pickle -> frame records, and its validation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from dali_streampetr.frames.frame_errors import InfoSchemaError
from dali_streampetr.frames.records import quat_to_matrix
from dali_streampetr.frames.store import load_frames
from float_tolerance import float_atol, product_scale
from loader_data import CLASSES


@pytest.fixture(scope="module")
def raw(tiny_root):
    with (tiny_root / "nuscenes2d_temporal_infos_train.pkl").open("rb") as f:
        return pickle.load(f)


def test_frames_sorted_converted_and_resolved(tiny_root, raw):
    frames = load_frames(tiny_root / "nuscenes2d_temporal_infos_train.pkl", tiny_root, CLASSES)
    assert [f.timestamp for f in frames] == sorted(f.timestamp for f in frames)
    info = next(i for i in raw["infos"] if i["token"] == frames[0].token)
    f = frames[0]
    assert (
        not f.has_sweeps
        and f.cam_names[0] == "CAM_FRONT"
        and all(p.startswith(str(tiny_root)) for p in f.img_paths)
    )
    valid = info["valid_flag"]
    want = info["gt_boxes"][valid]
    # float32 (tests/float_tolerance.py): x, y are cast once; the bottom z = z - h / 2 casts both and
    # rounds the difference (the halving is exact)
    atol = float_atol(np.float32, np.abs(want[:, :2]).max(), 1)
    np.testing.assert_allclose(f.gt_boxes[:, :2], want[:, :2], rtol=0, atol=atol)
    atol = float_atol(np.float32, (np.abs(want[:, 2]) + want[:, 5] / 2).max(), 3)
    np.testing.assert_allclose(f.gt_boxes[:, 2], want[:, 2] - want[:, 5] / 2, rtol=0, atol=atol)
    assert np.isfinite(f.gt_boxes).all() and f.gt_boxes.shape[1] == 9
    assert f.gt_labels.tolist() == [CLASSES.index(n) if n in CLASSES else -1 for n in info["gt_names"][valid]]
    # float32: both poses' rotations and translations cast (2), their 4-term product (4), the
    # inverse's 3-term -R^T t (3) and the product checked (4), on terms of the float64 chain
    e2g, l2e = (pose64(info[f"{k}_rotation"], info[f"{k}_translation"]) for k in ("ego2global", "lidar2ego"))
    atol = float_atol(
        np.float32, product_scale(e2g, l2e, np.linalg.inv(l2e), np.linalg.inv(e2g)), 2 + 4 + 3 + 4
    )
    np.testing.assert_allclose(f.ego_pose @ f.ego_pose_inv, np.eye(4), rtol=0, atol=atol)
    rotation = info["cams"]["CAM_FRONT"]["sensor2lidar_rotation"].T
    atol = float_atol(np.float32, 1, 1)  # a rotation cast to float32 and transposed
    np.testing.assert_allclose(f.extrinsics[0][:3, :3], rotation, rtol=0, atol=atol)


def pose64(quaternion, translation) -> np.ndarray:
    """The 4x4 float64 pose [R | t] of a (w, x, y, z) quaternion and a translation."""
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = quat_to_matrix(quaternion), translation
    return m


def test_quaternion_matches_axis_angle():
    angle = 0.7
    # float64, terms <= 1: cos, sin (1 ulp each: 2 + 2), the normalisation (6), the 4-term product (4)
    np.testing.assert_allclose(
        quat_to_matrix([np.cos(angle / 2), 0, 0, np.sin(angle / 2)]),
        [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]],
        rtol=0,
        atol=float_atol(np.float64, 1, 2 + 2 + 6 + 4),
    )


def test_missing_keys_are_listed_in_one_error(tiny_root, raw, tmp_path):
    infos = [dict(i) for i in raw["infos"]]
    del infos[2]["valid_flag"], infos[3]["sweeps"]
    infos[4]["cams"] = {
        k: {kk: vv for kk, vv in v.items() if kk != "cam_intrinsic"} for k, v in infos[4]["cams"].items()
    }
    path = tmp_path / "bad.pkl"
    path.write_bytes(pickle.dumps({"infos": infos}))
    with pytest.raises(InfoSchemaError) as err:
        load_frames(path, tiny_root, CLASSES)
    msg = str(err.value)
    assert "sweeps (first at infos[3])" in msg and "valid_flag (first at infos[2])" in msg
    assert "cams.CAM_FRONT.cam_intrinsic (first at infos[4])" in msg


@pytest.mark.parametrize("payload", [[1, 2], {"infos": []}, {"data": []}, {"infos": ["x"]}])
def test_wrong_shape_rejected(tiny_root, tmp_path, payload):
    path = tmp_path / "wrong.pkl"
    path.write_bytes(pickle.dumps(payload))
    with pytest.raises(InfoSchemaError):
        load_frames(path, tiny_root, CLASSES)


def _write(tmp_path, infos, name="bad.pkl"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps({"infos": infos}))
    return path


MALFORMED = [
    ("gt_boxes", lambda i: i["gt_boxes"][:, :6], "gt_boxes: expected an (n, 7) array of numbers"),
    ("valid_flag", lambda i: i["valid_flag"][:-1], "valid_flag: expected 8 booleans (one per gt_boxes row)"),
    ("valid_flag", lambda i: i["valid_flag"].astype(int), "valid_flag: expected 8 booleans"),
    ("timestamp", lambda i: str(i["timestamp"]), "timestamp: expected a number (microseconds), got str"),
    ("gt_velocity", lambda i: i["gt_velocity"][:, :1], "gt_velocity: expected an (8, 2) array"),
    ("gt_names", lambda i: i["gt_names"][:3], "gt_names: expected 8 class names"),
    (
        "ego2global_rotation",
        lambda i: [1.0, 0.0, 0.0],
        "ego2global_rotation: expected a (w, x, y, z) quaternion",
    ),
    ("sweeps", lambda i: None, "sweeps: expected a list, got NoneType"),
    ("token", lambda i: 17, "token: expected a non-empty string, got int 17"),
    ("bboxes2d", lambda i: i["bboxes2d"][:5], "bboxes2d: expected a list with one entry per camera (6)"),
]


@pytest.mark.parametrize(("key", "change", "expected"), MALFORMED, ids=[m[2][:40] for m in MALFORMED])
def test_malformed_field_names_info_index_key_and_expectation(
    tiny_root, raw, tmp_path, key, change, expected
):
    infos = [dict(i) for i in raw["infos"]]
    infos[5][key] = change(infos[5])
    with pytest.raises(InfoSchemaError) as err:
        load_frames(_write(tmp_path, infos), tiny_root, CLASSES)
    msg = str(err.value)
    token = infos[5]["token"]
    where = f"infos[5] (token {token})" if isinstance(token, str) else "infos[5]"
    assert f"{where}.{expected}" in msg, msg
    assert "bad.pkl" in msg


def test_malformed_camera_fields_and_2d_annotations_are_named(tiny_root, raw, tmp_path):
    infos = [dict(i) for i in raw["infos"]]
    infos[1]["cams"] = {k: dict(v) for k, v in infos[1]["cams"].items()}
    infos[1]["cams"]["CAM_BACK"]["data_path"] = None
    infos[1]["cams"]["CAM_FRONT"]["cam_intrinsic"] = np.eye(2)
    infos[1]["cams"]["CAM_FRONT_LEFT"]["timestamp"] = "1600000000"
    infos[2]["centers2d"] = list(infos[2]["centers2d"])
    infos[2]["centers2d"][0] = np.zeros((len(infos[2]["bboxes2d"][0]), 3), np.float32)
    infos[3]["depths"] = list(infos[3]["depths"])
    infos[3]["depths"][1] = np.zeros(len(infos[3]["bboxes2d"][1]) + 1, np.float32)
    with pytest.raises(InfoSchemaError) as err:
        load_frames(_write(tmp_path, infos), tiny_root, CLASSES)
    msg = str(err.value)
    assert (
        "infos[1] (token" in msg
        and ".cams.CAM_BACK.data_path: expected a non-empty path string, got NoneType" in msg
    )
    assert (
        ".cams.CAM_FRONT.cam_intrinsic: expected a 3x3 (or 3x4, 4x4) intrinsic matrix, "
        "got array of shape (2, 2)" in msg
    )
    assert ".cams.CAM_FRONT_LEFT.timestamp: expected a number (microseconds), got str" in msg
    assert "infos[2] (token" in msg and ".centers2d[0]: expected a (k, 2) array of numbers" in msg
    assert (
        "infos[3] (token" in msg
        and ".bboxes2d/centers2d/labels2d/depths[1]: expected the same number of rows" in msg
    )
    assert "5 malformed field(s)" in msg


def test_a_pickle_that_runs_code_is_refused_by_name_unless_trusted(tiny_root, raw, tmp_path):
    """A pickle is a program: the restricted unpickler refuses any global that is not numpy data or
    a builtin container, before calling it; trusted_pickle=True is plain pickle (and runs it)."""
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"infos": raw["infos"], "metadata": {"note": Payload()}}))
    with pytest.raises(
        InfoSchemaError, match=r"evil\.pkl .*refers to the global _?io\.open.*trusted_pickle=True"
    ):
        load_frames(path, tiny_root, CLASSES)
    assert not marker.exists()
    frames = load_frames(path, tiny_root, CLASSES, trusted_pickle=True)
    assert marker.exists() and len(frames) == len(raw["infos"])


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_restricted_unpickler_reads_numpy_data_of_every_kind(protocol):
    from dali_streampetr.frames.unpickle import load_pickle

    data = {
        "arrays": [
            np.arange(6).reshape(2, 3).astype(d) for d in (np.float32, np.float64, np.int64, np.uint8, bool)
        ],
        "names": np.array(["car", "animal"]),
        "objects": np.array([np.zeros(2), "x"], dtype=object),
        "scalars": [np.float64(1.5), np.float32(2.5), np.int64(3), np.bool_(True)],
        "builtins": {"set": {1, 2}, "tuple": (1, "a"), "bytes": b"\x00\xff", "none": None, "nested": [[1.0]]},
        "fortran": np.asfortranarray(np.ones((3, 2))),
    }
    import io

    got = load_pickle(io.BytesIO(pickle.dumps(data, protocol=protocol)), trusted=False)
    assert repr(got) == repr(data)
    for a, b in zip(got["arrays"], data["arrays"], strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert type(got["scalars"][1]) is np.float32


def test_the_synthetic_info_pickles_load_restricted(synthetic_dataset):
    """The converter's real output (StreamPETR's format) needs nothing outside the allowed globals."""
    from dali_streampetr.frames.unpickle import load_pickle_file

    for name in ("nuscenes2d_temporal_infos_train.pkl", "nuscenes2d_temporal_infos_val.pkl"):
        path = synthetic_dataset / name
        restricted = load_pickle_file(path, trusted=False)
        with path.open("rb") as f:
            plain = pickle.load(f)
        assert repr(restricted) == repr(plain)
