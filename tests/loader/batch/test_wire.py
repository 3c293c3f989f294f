"""The wire format: the geometry rows and the annotation record carry the targets bit for bit, with
their dtypes and upstream's odd shapes."""

from __future__ import annotations

import numpy as np
import pytest
from dali_streampetr.batch.wire import (
    GEOMETRY_WIDTH,
    annotation_records,
    geometry_rows,
    read_record,
    split_geometry,
)


def test_geometry_rows_round_trip_bit_for_bit():
    rng = np.random.default_rng(0)
    n = 6
    targets = {
        "lidar2img": rng.normal(size=(n, 4, 4)).astype(np.float32),
        "intrinsics": rng.normal(size=(n, 4, 4)).astype(np.float32),
        "extrinsics": rng.normal(size=(n, 4, 4)).astype(np.float32),
        "ego_pose": rng.normal(size=(4, 4)).astype(np.float32),
        "ego_pose_inv": rng.normal(size=(4, 4)).astype(np.float32),
        "img_timestamp": 1.6e9 + rng.uniform(size=n),
        "timestamp": np.float64(1.6e9 + 0.123456789),
    }
    other = {k: v * 2 for k, v in targets.items()}
    rows = np.concatenate([geometry_rows(targets), geometry_rows(other)])
    assert rows.shape == (2 * n, GEOMETRY_WIDTH) and rows.dtype == np.float64
    out = split_geometry(rows, 2, n)
    for key in ("lidar2img", "intrinsics", "extrinsics"):
        assert out[key].dtype == np.float32 and out[key].shape == (2, 1, n, 4, 4)
        assert np.array_equal(out[key][1, 0], other[key]) and np.array_equal(out[key][0, 0], targets[key])
    for key in ("ego_pose", "ego_pose_inv"):
        assert out[key].shape == (2, 1, 4, 4) and np.array_equal(out[key][0, 0], targets[key])
    assert out["img_timestamp"].dtype == np.float64 and np.array_equal(
        out["img_timestamp"][0, 0], targets["img_timestamp"]
    )
    assert out["timestamp"].shape == (2, 1) and out["timestamp"][1, 0] == other["timestamp"]
    assert all(v.flags.c_contiguous and not np.shares_memory(v, rows) for v in out.values())  # copies
    with pytest.raises(ValueError, match="geometry rows"):
        split_geometry(rows, 3, n)


def test_annotation_record_keeps_dtypes_and_odd_shapes():
    """Upstream's quirks survive the trip: ``(0,)`` arrays of a camera without 2D boxes and float64
    labels of a frame without valid boxes."""
    targets = {
        "gt_bboxes_3d": np.zeros((0, 9), dtype=np.float32),
        "gt_labels_3d": np.array([]),
        "gt_bboxes": [np.zeros((0,), dtype=np.float32), np.ones((2, 4), dtype=np.float32)],
        "gt_labels": [np.zeros((0,), dtype=np.float32), np.array([3, 1])],
        "centers2d": [np.zeros((0,), dtype=np.float32), np.ones((2, 2), dtype=np.float32)],
        "depths": [np.zeros((0,), dtype=np.float32), np.ones((2,), dtype=np.float32)],
    }
    records = annotation_records(targets, n_cams=3, plan={"iteration": 4})
    assert [r.dtype for r in records] == [np.uint8] * 3 and [len(r) for r in records[1:]] == [0, 0]
    back = read_record(records[0])
    for key, value in targets.items():
        pairs = zip(back[key], value, strict=True) if isinstance(value, list) else [(back[key], value)]
        for got, exp in pairs:
            assert got.dtype == exp.dtype and got.shape == exp.shape and np.array_equal(got, exp), key
            assert got.flags.writeable, key  # the model may edit its targets in place
    assert back["iteration"] == 4
