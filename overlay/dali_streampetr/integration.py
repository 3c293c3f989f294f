"""What the patched ``tools/train.py`` calls when a config sets ``use_dali_pipeline=True``.

Imports mmcv (through :mod:`.mmdet_adapter`), so it is only imported inside the upstream env.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mmcv.runner import get_dist_info

from .mmdet_adapter import MMDetDaliLoader, build_mmdet_loader, to_collated


def get_dali_pipeline_distributed_args(cfg: Any) -> dict[str, int | None]:
    """Rank, world size and DALI device id of this process.

    The real rank and world size are returned in both modes: the loader derives the sampler's
    rank 0 / 1 replica itself when ``data_loading_config.replicate_dataset_per_gpu`` is set, and
    keeps the real rank for its augmentation draws (as upstream's ``worker_init_fn`` does), so the
    ranks of a replicated run still draw different crops and flips. ``device_id`` is the local
    rank when DALI runs on the GPU, else None.
    """
    rank, world_size = get_dist_info()
    loading = cfg.get("data_loading_config", {}) or {}
    on_gpu = loading.get("device", "cpu") == "gpu"
    return {
        "rank": rank,
        "world_size": world_size,
        "device_id": int(os.environ.get("LOCAL_RANK", 0)) if on_gpu else None,
    }


class SlotLoggingLoader(MMDetDaliLoader):
    """The runner's loader, also appending which (scene, frame) each batch slot got to a JSONL file."""

    def __init__(self, loader: MMDetDaliLoader, log_path: Path) -> None:
        super().__init__(loader.loader)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("")

    def __next__(self) -> dict[str, Any]:
        iteration = self.loader.iteration
        batch = next(self.loader)
        slots = []
        for meta, record, prev in zip(batch["img_metas"], batch["dali"], batch["prev_exists"], strict=True):
            slots.append(
                {"scene": meta[0]["scene_token"], "token": record["token"], "index": record["index"],
                 "prev_exists": bool(prev[0])}
            )  # fmt: skip
        line = {"iter": iteration, "rank": self.loader.rank, "slots": slots}
        with self.log_path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return to_collated(batch)


def build_dali_train_loader(
    cfg: Any, *, rank: int, world_size: int, device_id: int | None
) -> MMDetDaliLoader:
    """The DALI training loader for ``cfg`` (a drop-in for the PyTorch DataLoader of the train set).

    It carries ``CLASSES`` from the config's ``class_names`` for the checkpoint meta and
    ``model.CLASSES``. With ``data_loading_config.log_slots=True`` each rank also writes
    ``<work_dir>/slots_rank<r>.jsonl``: the scene and frame every batch slot received.
    """
    loader = build_mmdet_loader(
        cfg, cfg.data.train.data_root, rank=rank, world_size=world_size, seed=cfg.get("seed") or 0,
        device_id=device_id,
    )  # fmt: skip
    if loader.loader.cfg.log_slots:
        loader = SlotLoggingLoader(loader, Path(cfg.work_dir) / f"slots_rank{rank}.jsonl")
    loader.CLASSES = tuple(cfg.class_names)
    return loader
