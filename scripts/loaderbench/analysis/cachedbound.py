"""The no-loader bound: the real model's training iterations on batches cached in memory
(``python -m loaderbench.analysis.cachedbound '<json>'``, as :mod:`..sweep.runcase`)."""

from __future__ import annotations

import statistics
import sys
import time
from itertools import cycle
from pathlib import Path
from typing import Any

from ..sweep.cases import build_torch, enter_checkout
from ..sweep.runcase import answer


def run(spec: dict[str, Any]) -> dict[str, Any]:
    enter_checkout()
    import torch
    from mmcv import Config
    from mmcv.parallel import MMDataParallel
    from mmcv.runner import build_optimizer
    from mmdet3d.models import build_model
    from overlaytool import require_code_root

    data_root = Path(spec["data_root"])
    cfg = Config.fromfile(str(require_code_root("loaderbench") / spec["config"]))
    cfg.data.train.data_root = f"{data_root}/"
    cfg.data.train.ann_file = str(data_root / "nuscenes2d_temporal_infos_train.pkl")
    torch.manual_seed(0)
    loader = iter(build_torch(cfg, 0))
    cached = [next(loader) for _ in range(spec.get("batches", 2))]
    del loader
    model = build_model(cfg.model, train_cfg=cfg.get("train_cfg"), test_cfg=cfg.get("test_cfg"))
    model.init_weights()
    model = MMDataParallel(model, device_ids=[])
    model.train()
    optimizer = build_optimizer(model, cfg.optimizer)
    clip = (cfg.get("optimizer_config") or {}).get("grad_clip")
    times = []
    for i, batch in zip(range(spec.get("iters", 4) + 1), cycle(cached), strict=False):
        t0 = time.perf_counter()
        outputs = model.train_step(batch, optimizer)
        optimizer.zero_grad()
        outputs["loss"].backward()
        if clip:
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], **clip)
        optimizer.step()
        if i:  # the first iteration warms up allocators and caches
            times.append(time.perf_counter() - t0)
    return {"config": spec["config"], "cached_batches": len(cached), "iters": len(times),
            "iter_times_s": times, "iter_s": statistics.median(times)}  # fmt: skip


if __name__ == "__main__":
    sys.exit(answer(run))
