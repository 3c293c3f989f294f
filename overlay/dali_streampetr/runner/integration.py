"""What the patched ``tools/train.py`` calls when a config sets ``use_dali_pipeline=True``:
:func:`get_dali_pipeline_distributed_args` (this process's rank, world size and DALI device) and
:func:`build_dali_train_loader`, which reads the config once, refuses an epoch-based mode without a
process group, and logs the run's schedule (:mod:`.schedule`) once the loader is built; with
``data_loading_config.log_slots`` a collate (:class:`SlotLog`) appends what each batch slot got to a
JSONL file (the (scene, frame), the augmentation draw and a SHA-1 of the slot's image tensor).

Imports mmcv, so it is only imported inside the upstream env.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch.distributed as dist
from mmcv.runner import get_dist_info
from mmdet.utils import get_root_logger

from ..config.reader import knobs_from, loader_config_from
from ..config.settings import TrainingMode, UnsupportedConfigError
from ..loader import Collate, DaliStreamLoader, build_loader
from ..pipeline.graph import local_device_id
from .eval_adapter import DaliTestDataLoader, FrameCount, SkippedImages, to_eval_collated
from .mmdet_adapter import MMDetDaliLoader, build_mmdet_loader, to_collated
from .schedule import RunSchedule
from .state_hook import DaliStreamStateHook, checkpoint_problem

__all__ = ["build_dali_test_loader", "build_dali_train_loader", "get_dali_pipeline_distributed_args"]


def build_dali_train_loader(
    cfg: Any, *, rank: int, world_size: int, device_id: int | None
) -> MMDetDaliLoader:
    """The DALI training loader for ``cfg`` (a drop-in for the PyTorch DataLoader of the train set).

    The info file is ``data.train.ann_file`` exactly as given (relative to the working directory,
    as upstream's dataset reads it); images are found under ``data.train.data_root``. It carries
    ``CLASSES`` from the config's ``class_names`` for the checkpoint meta and ``model.CLASSES``,
    ``runner_hooks`` that keep its stream position in checkpoints, and ``checkpoint_problem`` for
    ``--auto-resume``. With ``data_loading_config.log_slots=True`` each rank also writes
    ``<work_dir>/slots_rank<r>.jsonl`` (appended to when the run resumes).
    """
    settings = loader_config_from(cfg)  # the one read of the config; everything below is given it
    require_distributed_for(settings.mode)
    collate = to_collated
    if settings.log_slots:
        log_path = Path(cfg.work_dir) / f"slots_rank{rank}.jsonl"
        collate = SlotLog(log_path, rank, append=lambda: bool(cfg.get("resume_from")), then=to_collated)
    train = cfg.data.train
    loader = build_mmdet_loader(
        settings, train.data_root, rank=rank, world_size=world_size, seed=cfg.get("seed") or 0,
        device_id=device_id, ann_file=train.ann_file, collate=collate,
    )  # fmt: skip
    loader.CLASSES = tuple(cfg.class_names)
    loader.runner_hooks = [(DaliStreamStateHook(loader, cfg), "ABOVE_NORMAL")]
    loader.checkpoint_problem = functools.partial(checkpoint_problem, loader.loader)
    log_schedule(cfg, loader.loader)
    return loader


def build_dali_test_loader(cfg: Any, dataset: Any | None, *, split: str = "test") -> DaliTestDataLoader:
    """The DALI test loader of ``data.<split>`` (``test``: the patched ``tools/test.py``; ``val``: the
    evaluation hook of ``--validate``), a drop-in for upstream's test DataLoader over ``dataset``
    (upstream's test dataset, built by the caller: its length and ``evaluate``; None on a rank that
    does not evaluate, which then gets :class:`~.eval_adapter.FrameCount`). The info file is
    ``data.<split>.ann_file`` as given, images as the training loader finds them (``data_root`` where
    the split names one); this process's rank, world size and DALI device as in training. Every
    config value the test loader does not reproduce is refused by name here, before any frame is read.
    """
    settings = loader_config_from(cfg, split)
    part = cfg.data[split]
    args = get_dali_pipeline_distributed_args(cfg)
    skipped = SkippedImages(to_eval_collated)
    loader = build_loader(
        settings, part.get("data_root") or ".", **args, ann_file=part.ann_file, collate=skipped,
        logger=get_root_logger(),
    )  # fmt: skip
    if dataset is None:
        dataset = FrameCount(len(loader.frames), list(cfg.class_names))
    elif len(loader.frames) != len(dataset):
        raise RuntimeError(
            f"the DALI test loader read {len(loader.frames)} frames from {part.ann_file}, upstream's dataset "
            f"{len(dataset)}: they must be the same set (data.{split}.load_interval, a filtered info file?)"
        )
    get_root_logger().info(
        f"DALI test loader ({split}): {len(loader.frames)} frames; rank {args['rank']} of "
        f"{args['world_size']}: frames {loader.sampler.chunk[0]}..{loader.sampler.chunk[-1]} "
        f"({len(loader)} with the wrap-around)"
    )
    return DaliTestDataLoader(loader, dataset, skipped)


def get_dali_pipeline_distributed_args(cfg: Any) -> dict[str, int | None]:
    """Rank, world size and DALI device id of this process.

    The real rank and world size are returned in both modes: the loader derives the sampler's
    rank 0 / 1 replica itself when ``data_loading_config.replicate_dataset_per_gpu`` is set, and
    keeps the real rank for its augmentation draws (as upstream's ``worker_init_fn`` does), so the
    ranks of a replicated run still draw different crops and flips. ``device_id`` is the local
    rank when DALI runs on the GPU, else None (``data_loading_config.device``, read and checked by
    :func:`~..config.reader.knobs_from`: this runs before the whole config is read).
    """
    rank, world_size = get_dist_info()
    return {"rank": rank, "world_size": world_size, "device_id": local_device_id(knobs_from(cfg).device)}


def require_distributed_for(mode: TrainingMode) -> None:
    """Epoch-based modes reproduce upstream's distributed sampler. Without a process group upstream's
    ``build_dataloader`` takes mmdet's ``GroupSampler``, whose order comes from the main process's
    global ``np.random`` (shared with the model's own draws): the loader refuses that case."""
    if mode.epoch_based and not (dist.is_available() and dist.is_initialized()):
        raise UnsupportedConfigError(
            f"the {mode.name.replace('_', '-')} config runs without a process group: upstream then samples "
            "with mmdet's GroupSampler from the main process's np.random, which the DALI loader does not "
            "reproduce; launch distributed, also for one process (tools/dist_train.sh CONFIG 1, or torchrun "
            "--nproc_per_node=1 tools/train.py CONFIG --launcher pytorch), where upstream uses "
            "DistributedGroupSampler"
        )


def log_schedule(cfg: Any, loader: DaliStreamLoader) -> None:
    """Print the data size, world size, batch, mode, iterations per epoch and effective epochs;
    warn when the config's ``num_gpus`` is not the real world size."""
    schedule = RunSchedule(
        frames=len(loader.frames),
        world_size=loader.world_size,
        samples_per_gpu=loader.cfg.samples_per_gpu,
        mode=loader.sampler.mode,
        max_iters=(cfg.get("runner") or {}).get("max_iters"),
        config_num_gpus=cfg.get("num_gpus"),
        config_iters_per_epoch=cfg.get("num_iters_per_epoch"),
    )
    logger = get_root_logger()
    for line in schedule.report():
        logger.info(line)
    warning = schedule.gpu_count_warning()
    if warning:
        logger.warning(warning)


class SlotLog:
    """The collate: one line per batch, ``{"iter", "rank", "slots"}``. ``append`` is asked at the
    first batch whether to keep the file's lines (``--auto-resume`` decides after the build)."""

    def __init__(self, log_path: Path, rank: int, *, append: Callable[[], bool], then: Collate) -> None:
        self.log_path, self.rank, self.then = log_path, rank, then
        self._append: Callable[[], bool] | None = append
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, batch: dict[str, Any]) -> Any:
        if self._append is not None:
            if not self._append():
                self.log_path.write_text("")
            self._append = None
        slots = []
        images = batch["img"].detach().cpu().numpy()  # one device-to-host copy for the whole batch
        for b, (meta, record, prev) in enumerate(
            zip(batch["img_metas"], batch["dali"], batch["prev_exists"], strict=True)
        ):
            pixels = images[b].tobytes()
            slots.append(  # the sample's own (last) frame; a multi-frame sample also lists its queue
                {"scene": meta[-1]["scene_token"], "token": record["token"], "index": record["index"],
                 "prev_exists": bool(prev[-1]), "draw": record["draw"].as_dict(),
                 "queue": [f["index"] for f in record["frames"]],
                 "img_sha1": hashlib.sha1(pixels).hexdigest()}
            )  # fmt: skip
        line = {"iter": batch["dali"][0]["iteration"], "rank": self.rank, "slots": slots}
        with self.log_path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return self.then(batch)
