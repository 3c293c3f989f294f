"""The fast image path (``image_path="fast"``) beside the exact one: a second DALI loader on the
same config, data and seed, stepped with the lock-step pair. Its images are compared with the
original's (a row of their own, with bounds of their own: the exact path's stay as they are), and
every other field of its batches with the exact DALI batch's, bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from .compare import ImageStats, field_name, walk

# grey levels, per image: the fast path's measured difference on the synthetic set (r50: worst image
# mean 0.64, p99.9 12) with room for other photos; a geometry error (a window moved by one
# resized pixel, a wrong flip) gives mean >= 3 and p99.9 >= 50
FAST_MEAN_TOL, FAST_P999_TOL = 1.5, 20.0
ROW = "img (image_path=fast)"


class FastImageRow:
    """Accumulates the fast path's image row and its target check over the lock-step pairs."""

    def __init__(self, cfg: Any, data_root: Path, seed: int, std: tuple[float, float, float]) -> None:
        from dali_streampetr import build_loader

        self.loader = build_loader(cfg, data_root, rank=0, world_size=1, seed=seed, image_path="fast")
        self.images = ImageStats(np.asarray(std, dtype=np.float32), name=ROW)
        self.target_diffs: list[str] = []

    def add(self, pair: Any, label: str) -> None:
        """The fast batch of ``pair``'s iteration: its images vs the original's, the rest vs DALI's."""
        from dali_streampetr import to_collated

        fast = to_collated(next(self.loader))
        problems: list[str] = []
        for path, a, b in walk(fast, pair.dali_collated, "", problems):
            if field_name(path) != "img" and not torch.equal(a, b):  # walk yields equal dtypes and shapes
                self.target_diffs.append(f"{label}: {path} differs from the exact path")
        self.target_diffs += [f"{label}: {p}" for p in problems]
        for path, a, b in walk(fast, pair.original, "", []):
            if field_name(path) == "img":
                self.images.update(a, b)

    def summary(self) -> dict[str, Any]:
        s = self.images.summary()
        s["tolerance"] = {"mean_abs": FAST_MEAN_TOL, "p99_9": FAST_P999_TOL, "per": "image"}
        s["ok"] = s["worst_image_mean_abs"] <= FAST_MEAN_TOL and s["worst_image_p99_9"] <= FAST_P999_TOL
        return {"img": s, "target_diffs": self.target_diffs, "ok": bool(s["ok"] and not self.target_diffs)}

    def close(self) -> None:
        self.loader.close()
