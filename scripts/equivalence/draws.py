"""Do the DALI loader's own draws follow upstream's distributions? Many draws from each side (fixed
seeds), compared with two-sample Kolmogorov-Smirnov tests (continuous values) and chi-squared tests
(flip, right-side padding)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .draw_replay import patched_random

# The family-wise level of one config's draw tests: each of its k statistical tests fails when
# p < ALPHA / k (Bonferroni; the seeds are fixed, so the outcome is deterministic). Without the
# correction 6 tests at 0.01 fail a correct loader on 6 % of seeds (the 8-key config's seed 2 did).
ALPHA = 0.01


@contextlib.contextmanager
def recording(names: tuple[str, ...] = ("uniform", "normal", "choice")) -> Iterator[list[tuple[str, Any]]]:
    """Record what ``np.random.<name>`` returns (the calls themselves are unchanged)."""
    log: list[tuple[str, Any]] = []

    def spy(name: str, real: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            log.append((name, real(*args, **kwargs)))
            return log[-1][1]

        return call

    with patched_random(spy, names):
        yield log


def _pipeline_step(cfg: Any, name: str) -> dict:
    step = next(t for t in cfg.data.train.pipeline if t["type"] == name)
    return {k: v for k, v in step.items() if k != "type"}


def upstream_draws(cfg: Any, n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` frames of upstream's draws: the real ``_sample_augmentation`` and the real
    ``GlobalRotScaleTransImage`` (on an empty frame) with the global ``np.random`` seeded once."""
    import torch
    from mmdet3d.core.bbox import LiDARInstance3DBoxes
    from projects.mmdet3d_plugin.datasets.pipelines.transform_3d import (
        GlobalRotScaleTransImage,
        ResizeCropFlipRotImage,
    )

    ida = ResizeCropFlipRotImage(**_pipeline_step(cfg, "ResizeCropFlipRotImage"))
    bev = GlobalRotScaleTransImage(**_pipeline_step(cfg, "GlobalRotScaleTransImage"))
    rows = []
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        for _ in range(n):
            resize, _dims, crop, flip, rotate = ida._sample_augmentation()
            results = {
                "lidar2img": [np.eye(4, dtype=np.float32)],
                "ego_pose": np.eye(4, dtype=np.float32),
                "ego_pose_inv": np.eye(4, dtype=np.float32),
                "gt_bboxes_3d": LiDARInstance3DBoxes(torch.zeros(0, 9), box_dim=9),
            }
            with recording() as log:
                bev(results)
            (_, angle), (_, scale), (_, trans) = log
            rows.append((resize, crop[0], crop[1], float(flip), rotate, angle, scale, *np.asarray(trans)))
    finally:
        np.random.set_state(state)
    return _columns(np.array(rows, dtype=np.float64))


def dali_draws(loader_cfg: Any, n: int, seed: int, batch_size: int = 2) -> dict[str, np.ndarray]:
    """``n`` draws of the DALI loader (rank 0, consecutive iterations, every slot)."""
    from dali_streampetr.toolkit import frame_draw

    rows = []
    for k in range(n):
        d = frame_draw(loader_cfg.aug, seed, 0, k // batch_size, k % batch_size)
        rows.append((d.resize, d.crop[0], d.crop[1], float(d.flip), d.rotate, d.rot_angle, d.scale_ratio,
                     *d.translation))  # fmt: skip
    return _columns(np.array(rows, dtype=np.float64))


def _columns(a: np.ndarray) -> dict[str, np.ndarray]:
    names = ("resize", "crop_w", "crop_h", "flip", "rotate", "rot_angle", "scale_ratio", "tx", "ty", "tz")
    return {name: a[:, i] for i, name in enumerate(names)}


def compare_draws(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray], pad_below: float) -> dict:
    """KS for resize, crop_w, rot_angle, scale_ratio and a translation either side draws
    (``translation_std`` > 0); chi-squared for flip and for padding (resize < ``pad_below``); exact
    for the constants (rotate, a translation of std 0, and a flip or padding that has the same
    outcome in every draw of both sides: ``rand_flip=False``, a resize range that never pads)."""
    from scipy import stats

    out: dict[str, Any] = {}
    for key in ("resize", "crop_w", "rot_angle", "scale_ratio"):
        res = stats.ks_2samp(ours[key], theirs[key])
        out[key] = {"test": "ks_2samp", "statistic": float(res.statistic), "p": float(res.pvalue)}
    for key, fn in (("flip", lambda d: d["flip"] > 0.5), ("pad", lambda d: d["resize"] < pad_below)):
        table = np.array([[np.sum(fn(d)), np.sum(~fn(d))] for d in (ours, theirs)])
        counts = {"dali": table[0].tolist(), "upstream": table[1].tolist()}
        if (table.sum(axis=0) == 0).any():  # the same outcome every draw on both sides (no padding, no flip)
            out[key] = {"test": "constant", "values": [bool(table[0, 0])], "p": 1.0, "counts": counts}
            continue
        res = stats.chi2_contingency(table)
        out[key] = {"test": "chi2_contingency", "statistic": float(res.statistic), "p": float(res.pvalue),
                    "counts": counts}  # fmt: skip
    for key in ("rotate", "tx", "ty", "tz"):
        drawn = key != "rotate" and any(len(np.unique(d[key])) > 1 for d in (ours, theirs))
        if drawn:  # a translation_std > 0: normal draws (either side drawing them, the other not: KS fails)
            res = stats.ks_2samp(ours[key], theirs[key])
            out[key] = {"test": "ks_2samp", "statistic": float(res.statistic), "p": float(res.pvalue)}
            continue
        values = np.unique(np.concatenate([ours[key], theirs[key]]))
        out[key] = {"test": "constant", "values": values.tolist(), "p": 1.0 if len(values) == 1 else 0.0}
    tests = sum(entry["test"] != "constant" for entry in out.values())
    for entry in out.values():
        entry["alpha"] = ALPHA / tests if entry["test"] != "constant" else None
        entry["ok"] = entry["p"] >= ALPHA / tests if entry["test"] != "constant" else entry["p"] == 1.0
    out["n"] = {"dali": len(ours["resize"]), "upstream": len(theirs["resize"])}
    return out
