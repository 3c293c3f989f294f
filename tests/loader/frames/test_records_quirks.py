"""Upstream quirks the frame records reproduce so that the loader's batches equal the original ones
exactly (found by the equivalence harness, tests/equivalence); the image affine's quirk is in
`batch/test_transforms_geometry.py`."""

from __future__ import annotations

import numpy as np
from dali_streampetr.frames.records import _labels, _per_cam, quat_to_matrix
from float_tolerance import float_atol


def test_no_valid_box_gives_float64_labels_like_np_array_of_an_empty_list() -> None:
    assert _labels(np.array([]), ["car"]).dtype == np.float64
    assert _labels(np.array(["car", "x"]), ["car"]).tolist() == [0, -1]
    assert _labels(np.array(["car"]), ["car"]).dtype == np.int64


def test_empty_camera_annotations_keep_the_pickles_shape() -> None:
    assert _per_cam(np.array([], dtype=np.float32), np.float32, 4).shape == (0,)
    assert _per_cam(np.zeros((0, 4)), np.float32, 4).shape == (0, 4)
    assert _per_cam([[1, 2, 3, 4]], np.float32, 4).shape == (1, 4)


def test_quaternion_matrix_is_a_rotation_and_normalises() -> None:
    q = np.array([0.9, 0.1, -0.3, 0.2])
    r = quat_to_matrix(q)
    # float64 (tests/float_tolerance.py), terms <= 1 (unit quaternion, rotation rows): each matrix
    # rounds the 4-term dot q . q, the square root, the division (6) and its 4-term product (4)
    np.testing.assert_allclose(r @ r.T, np.eye(3), rtol=0, atol=float_atol(np.float64, 1, 2 * 10 + 3))
    atol = float_atol(np.float64, 1, 2 * 10 + 1)  # q * 3 rounds once more
    np.testing.assert_allclose(quat_to_matrix(q * 3), r, rtol=0, atol=atol)
    np.testing.assert_array_equal(quat_to_matrix([1.0, 0.0, 0.0, 0.0]), np.eye(3))
