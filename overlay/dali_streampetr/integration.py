"""What the patched ``tools/train.py`` calls when a config sets ``use_dali_pipeline=True``.

Imports mmcv (through :mod:`.mmdet_adapter`), so it is only imported inside the upstream env.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from mmcv.runner import CheckpointHook, Hook, get_dist_info
from mmcv.utils import get_logger

from .config_reader import loader_config_from
from .mmdet_adapter import MMDetDaliLoader, build_mmdet_loader, to_collated
from .placement import local_device_id
from .resume import META_KEY, LoaderStateMismatch, fitting_state, stream_state
from .schedule import RunSchedule
from .training_mode import UnsupportedConfigError

LOGGER = "mmdet"  # the logger tools/train.py sets up (log file, rank 0 only)


def get_dali_pipeline_distributed_args(cfg: Any) -> dict[str, int | None]:
    """Rank, world size and DALI device id of this process.

    The real rank and world size are returned in both modes: the loader derives the sampler's
    rank 0 / 1 replica itself when ``data_loading_config.replicate_dataset_per_gpu`` is set, and
    keeps the real rank for its augmentation draws (as upstream's ``worker_init_fn`` does), so the
    ranks of a replicated run still draw different crops and flips. ``device_id`` is the local
    rank when DALI runs on the GPU, else None.
    """
    rank, world_size = get_dist_info()
    device = (cfg.get("data_loading_config", {}) or {}).get("device", "cpu")
    return {"rank": rank, "world_size": world_size, "device_id": local_device_id(device)}


class SlotLoggingLoader(MMDetDaliLoader):
    """The runner's loader, also appending what each batch slot got to a JSONL file: the (scene,
    frame), the augmentation draw and a SHA-1 of the slot's image tensor."""

    def __init__(self, loader: MMDetDaliLoader, log_path: Path, *, append: Callable[[], bool]) -> None:
        super().__init__(loader.loader)
        self.loader.collate = self._log_and_collate
        self.log_path = log_path
        self._append = append  # asked at the first batch: --auto-resume decides after the build
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def _log_and_collate(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self._append is not None:
            if not self._append():
                self.log_path.write_text("")
            self._append = None
        iteration = self.loader.iteration  # the loader counts the batch once it is handed over
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
        line = {"iter": iteration, "rank": self.loader.rank, "slots": slots}
        with self.log_path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return to_collated(batch)


class DaliStreamStateHook(Hook):
    """Every checkpoint carries each rank's loader state (``meta['dali_loader']['ranks']``); on
    resume each rank checks its entry against its own loader and continues at the runner's
    iteration, before the first batch builds the pipeline. A state that does not fit is refused."""

    def __init__(self, loader: MMDetDaliLoader, cfg: Any) -> None:
        self.loader, self.cfg = loader, cfg

    def before_run(self, runner: Any) -> None:
        checkpoint = self.cfg.get("resume_from")
        if not checkpoint:
            return
        # only the meta is needed: mmap leaves the weights (read once already by resume()) on disk
        meta = torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=False).get("meta", {})
        mine = stream_state(self.loader.loader)
        if META_KEY not in meta:
            get_logger(LOGGER).warning(
                f"{checkpoint} holds no DALI loader state (written by the PyTorch loader?): the DALI "
                f"stream continues at iteration {runner.iter} without checking that it is the same stream"
            )
            state = {**mine, "iteration": runner.iter}
        else:
            state = fitting_state(meta[META_KEY], mine, iteration=runner.iter, checkpoint=checkpoint)
        self.loader.load_state_dict(state)
        get_logger(LOGGER).info(f"DALI loader: resumed the data stream at iteration {runner.iter}")

    def after_train_iter(self, runner: Any) -> None:
        if _checkpoint_due(runner, by_epoch=False):
            self._store(runner)

    def after_train_epoch(self, runner: Any) -> None:
        if _checkpoint_due(runner, by_epoch=True):
            self._store(runner)

    def _store(self, runner: Any) -> None:
        mine = stream_state(self.loader.loader)
        ranks = [mine]
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            ranks = [None] * dist.get_world_size()
            dist.all_gather_object(ranks, mine)
        if runner.meta is None:
            runner.meta = {}
        runner.meta[META_KEY] = {"ranks": ranks}


def checkpoint_problem(loader: MMDetDaliLoader, checkpoint: str) -> str | None:
    """Why this loader cannot continue the data stream of ``checkpoint`` (its stored DALI state
    does not fit this run), or None; ``--auto-resume`` skips such a file. A checkpoint without a
    DALI state (the PyTorch loader's) is accepted, as ``--resume-from`` accepts it."""
    meta = torch.load(checkpoint, map_location="cpu", mmap=True, weights_only=False).get("meta", {})
    if META_KEY not in meta:
        return None
    iteration = int(meta.get("iter", 0))
    try:
        fitting_state(meta[META_KEY], stream_state(loader.loader), iteration=iteration, checkpoint=checkpoint)
    except LoaderStateMismatch as exc:
        return f"its DALI loader state does not fit this run ({exc})"
    return None


def _checkpoint_due(runner: Any, *, by_epoch: bool = False) -> bool:
    """Whether a CheckpointHook saves after this iteration (``by_epoch=False``) or epoch (the same
    test it makes), or, after an iteration, another hook that says so through
    ``saves_checkpoint_after(runner)`` (``requeue.CheckpointOnSignalHook``); every rank reaches the
    same answer, so the gather above is collective."""

    def due(h: Any) -> bool:
        if not isinstance(h, CheckpointHook):
            return not by_epoch and getattr(h, "saves_checkpoint_after", lambda runner: False)(runner)
        if h.by_epoch != by_epoch:
            return False
        if by_epoch:
            return h.every_n_epochs(runner, h.interval) or (h.save_last and h.is_last_epoch(runner))
        return h.every_n_iters(runner, h.interval) or (h.save_last and h.is_last_iter(runner))

    return any(due(h) for h in runner.hooks)


def require_distributed_for(cfg: Any) -> None:
    """Epoch-based modes reproduce upstream's distributed sampler. Without a process group upstream's
    ``build_dataloader`` takes mmdet's ``GroupSampler``, whose order comes from the main process's
    global ``np.random`` (shared with the model's own draws): the loader refuses that case."""
    mode = loader_config_from(cfg).mode
    if mode.epoch_based and not (dist.is_available() and dist.is_initialized()):
        raise UnsupportedConfigError(
            f"the {mode.name.replace('_', '-')} config runs without a process group: upstream then samples "
            "with mmdet's GroupSampler from the main process's np.random, which the DALI loader does not "
            "reproduce; launch distributed, also for one process (tools/dist_train.sh CONFIG 1, or torchrun "
            "--nproc_per_node=1 tools/train.py CONFIG --launcher pytorch), where upstream uses "
            "DistributedGroupSampler"
        )


def log_schedule(cfg: Any, loader: MMDetDaliLoader) -> None:
    """Print the data size, world size, batch, mode, iterations per epoch and effective epochs;
    warn when the config's ``num_gpus`` is not the real world size."""
    inner = loader.loader
    schedule = RunSchedule(
        frames=len(inner.frames),
        world_size=inner.world_size,
        samples_per_gpu=inner.cfg.samples_per_gpu,
        mode=inner.sampler.mode,
        max_iters=(cfg.get("runner") or {}).get("max_iters"),
        config_num_gpus=cfg.get("num_gpus"),
        config_iters_per_epoch=cfg.get("num_iters_per_epoch"),
    )
    logger = get_logger(LOGGER)
    for line in schedule.report():
        logger.info(line)
    warning = schedule.gpu_count_warning()
    if warning:
        logger.warning(warning)


def build_dali_train_loader(
    cfg: Any, *, rank: int, world_size: int, device_id: int | None
) -> MMDetDaliLoader:
    """The DALI training loader for ``cfg`` (a drop-in for the PyTorch DataLoader of the train set).

    The info file is ``data.train.ann_file`` exactly as given (relative to the working directory,
    as upstream's dataset reads it); images are found under ``data.train.data_root``. It carries
    ``CLASSES`` from the config's ``class_names`` for the checkpoint meta and ``model.CLASSES``, and
    ``runner_hooks`` that keep its stream position in checkpoints. With
    ``data_loading_config.log_slots=True`` each rank also writes ``<work_dir>/slots_rank<r>.jsonl``
    (appended to when the run resumes).
    """
    require_distributed_for(cfg)
    train = cfg.data.train
    loader = build_mmdet_loader(
        cfg, train.data_root, rank=rank, world_size=world_size, seed=cfg.get("seed") or 0,
        device_id=device_id, ann_file=train.ann_file,
    )  # fmt: skip
    if loader.loader.cfg.log_slots:
        log_path = Path(cfg.work_dir) / f"slots_rank{rank}.jsonl"
        loader = SlotLoggingLoader(loader, log_path, append=lambda: bool(cfg.get("resume_from")))
    loader.CLASSES = tuple(cfg.class_names)
    loader.runner_hooks = [(DaliStreamStateHook(loader, cfg), "ABOVE_NORMAL")]
    loader.checkpoint_problem = functools.partial(checkpoint_problem, loader)
    log_schedule(cfg, loader)
    return loader
