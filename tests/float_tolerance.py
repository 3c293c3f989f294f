"""Absolute tolerances derived from floating-point arithmetic, not from one machine's results.

Every IEEE operation (+, -, *, /, sqrt, a cast to a narrower type) rounds its exact result to
relative ``u = eps / 2`` (``eps = np.finfo(dtype).eps``: 2**-23 for float32, 2**-52 for float64).
A value computed by a chain of ``n`` rounding operations is therefore off by at most
``gamma_n * scale`` with ``gamma_n = n * u / (1 - n * u)`` (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., Lemma 3.1 and Lemma 3.3 for chains), where ``scale`` bounds the
magnitude of the terms that are rounded: for a dot product or a sum of ``n`` terms
``sum(|x_i * y_i|)`` (not the possibly cancelling result), for a matrix product ``A @ B`` the largest
entry of ``|A| @ |B|``, for a chain ``A1 @ ... @ Ak`` that of ``|A1| @ ... @ |Ak|``. The bound holds
for any order of summation and any vector width, so it is the same on every CPU (AVX2, AVX-512,
a GPU); a result that exceeds it is wrong, not unlucky.

Count ``ops`` as the roundings on the longest path into the compared value, on both sides of the
comparison: a length-``n`` dot product is ``n`` (``n - 1`` additions after a multiplication), each
input cast to ``dtype`` one more. Where a quantity is exact in the dtype (integers, halves, copies)
compare exactly instead; where a bound is empirical, say so in a comment and say where it is
documented (docs/tolerances.md).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

# The rounding steps of a batch's lidar2img (dali_streampetr.batch.transforms): K' = ida K and K' ext in
# float64 (3 + 4), the cast to float32 (1), then three float32 BEV steps, each a 4-term product by
# a factor rounded once and inverted by LU (3 * 4 + 3 * (1 + 12))
BATCH_LIDAR2IMG_OPS = 3 + 4 + 1 + 3 * 4 + 3 * (1 + 12)


def float_atol(dtype: DTypeLike, scale: ArrayLike, ops: int = 1) -> float | np.ndarray:
    """The worst-case absolute rounding error ``gamma_ops * scale`` of a value computed in ``dtype``
    by ``ops`` rounding operations on terms of magnitude at most ``scale`` (see the module docstring);
    an array of scales gives one bound per value."""
    u = float(np.finfo(dtype).eps) / 2
    if ops * u >= 1:
        raise ValueError(f"{ops} operations in {np.dtype(dtype).name} can lose every digit: no bound")
    gamma = ops * u / (1 - ops * u)
    return gamma * float(scale) if np.ndim(scale) == 0 else gamma * np.asarray(scale, dtype=np.float64)


def product_scale(*factors: ArrayLike) -> float:
    """The largest entry of ``|A1| @ |A2| @ ... @ |Ak|`` (in float64): the ``scale`` of every term
    a float matrix product ``A1 @ ... @ Ak`` rounds, and of the product's own entries."""
    out = np.abs(np.asarray(factors[0], dtype=np.float64))
    for factor in factors[1:]:
        out = out @ np.abs(np.asarray(factor, dtype=np.float64))
    return float(out.max())


def projection_atol(dtype: DTypeLike, lidar2img: ArrayLike, points: ArrayLike, ops: int) -> np.ndarray:
    """Per point, the bound in pixels on the rounding error of projecting ``points`` (N, 3) with a 4x4
    ``lidar2img`` when the matrix and the points carry ``ops`` rounding steps in ``dtype`` (the
    projection's own 4-term dots and division included): u = x / z carries the error of x and |u|
    times that of z, over z, where x and z round the terms ``|P| @ |(p, 1)|``."""
    p = np.asarray(lidar2img, dtype=np.float64)
    hom = np.c_[np.asarray(points, dtype=np.float64), np.ones(len(points))]
    terms = np.abs(hom) @ np.abs(p).T
    exact = hom @ p.T
    pixels = np.abs(exact[:, :2] / exact[:, 2:3])
    scale = (terms[:, :2] + pixels * terms[:, 2:3]) / np.abs(exact[:, 2:3])
    return float_atol(dtype, scale.max(1), ops)
