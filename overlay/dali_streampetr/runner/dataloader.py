"""What the patched ``tools/train.py``, ``tools/test.py`` and the evaluation hook of ``--validate`` call
when a config selects the DALI loader: :func:`build_dali_loader` for either split, which reads the
config once, and the one DataLoader drop-in it returns (:class:`DaliDataLoader`).

Imports mmcv, so it is only imported inside the upstream env.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import torch.distributed as dist
from mmcv.runner import get_dist_info
from mmdet.utils import get_root_logger
from torch.utils.data import DataLoader

from ..config.reader import loader_config_from
from ..loader import Collate, DaliStreamLoader, build_loader
from ..pipeline.graph import local_device_id
from ..settings import LoaderConfig, SamplingMode, UnsupportedConfigError
from .collate import SkippedImages, SlotLog, to_collated, to_eval_collated
from .schedule import RunSchedule
from .state_hook import DaliStreamStateHook, checkpoint_problem


class DaliDataLoader(DataLoader):
    """The DALI loader where upstream passes its ``DataLoader``, for training and for evaluation
    (``dataset``: upstream's test dataset, or :class:`FrameCount`). A ``DataLoader`` subclass because
    mmcv's ``EvalHook`` refuses anything else; ``DataLoader.__init__`` is not run. ``skipped``: the
    collate step that lists the images a pass served black, if any."""

    def __init__(
        self, loader: DaliStreamLoader, dataset: Any = None, skipped: SkippedImages | None = None
    ) -> None:
        self.loader, self.dataset, self._skipped = loader, dataset, skipped
        self.sampler = loader.sampler
        self.batch_size = loader.cfg.samples_per_gpu
        self.num_workers = 0
        self.runner_hooks: list[tuple[Any, str]] = []  # (hook, priority): registered by custom_train_detector

    def __iter__(self) -> DaliDataLoader:
        if self._skipped is not None:
            self._skipped.entries.clear()
        iter(self.loader)  # an epoch-based loader starts counting its pass's batches here
        return self

    def __next__(self) -> Any:
        return next(self.loader)  # collated by the loader, before it starts the next batch

    def __len__(self) -> int:
        return len(self.loader)

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)

    def skipped_images(self) -> list[tuple[str, str, str]]:
        """(sample token, camera, path) of every image of the last pass served black."""
        frames, entries = self.loader.frames, self._skipped.entries if self._skipped is not None else []
        return [
            (token, cam, frames[index].img_paths[frames[index].cam_names.index(cam)])
            for token, cam, index in entries
        ]

    def close(self) -> None:
        self.loader.close()


class FrameCount:
    """Upstream's test dataset as a rank that does not evaluate uses it: its length (the frames of the
    loader's frame store) and ``CLASSES``. ``tools/test.py`` builds upstream's dataset on rank 0 only,
    so the other ranks do not read the info file once more each; rank 0 alone evaluates."""

    def __init__(self, size: int, classes: list[str]) -> None:  # noqa: D107
        self.size, self.CLASSES = size, classes

    def __len__(self) -> int:
        return self.size

    def evaluate(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("only rank 0 evaluates: this rank holds the frame count, not upstream's dataset")

    format_results = evaluate


def distributed_args(settings: LoaderConfig, rank: int | None = None, world_size: int | None = None) -> dict:
    """Rank, world size (the real ones unless given: a tool that plays every rank passes them) and
    DALI device id of this process. Replicated runs too get the real rank: the loader derives the
    sampler's rank 0 of 1 itself and keeps the real rank for its draws, as upstream's
    ``worker_init_fn`` does."""
    real_rank, real_world_size = get_dist_info()
    return {
        "rank": real_rank if rank is None else rank,
        "world_size": real_world_size if world_size is None else world_size,
        "device_id": local_device_id(settings.device),
    }


def build_dali_loader(
    cfg: Any,
    split: str = "train",
    dataset: Any = None,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    seed: int | None = None,
    collate: Collate | None = None,
    data_root: str | Path | None = None,
    ann_file: str | Path | None = None,
    **overrides: Any,
) -> DaliDataLoader:
    """The DALI drop-in for upstream's DataLoader of ``data.<split>`` (``train``, ``test``, ``val``),
    the config read once, here: what the loader does not reproduce is refused before any frame is read.

    Files: the config's, or ``data_root`` / ``ann_file`` as :func:`..loader.build_loader` takes them.
    ``rank`` / ``world_size`` given, the caller plays the ranks and no process group is required.
    ``seed``: the config's by default; ``collate``: the collated batch (training with
    ``log_slots=True``: through ``<work_dir>/slots_rank<r>.jsonl``); ``overrides``:
    ``data_loading_config`` keys.

    Training: the loader carries ``CLASSES``, the ``runner_hooks`` that keep its stream position in
    checkpoints and ``checkpoint_problem`` for ``--auto-resume``. Evaluation: ``dataset`` is
    upstream's test dataset, None on a rank that does not evaluate (it gets :class:`FrameCount`)."""
    settings = loader_config_from(cfg, split, **overrides)  # the one read of the config
    place = distributed_args(settings, rank, world_size)
    if rank is None or world_size is None:
        require_distributed_for(settings.mode)
    files = {"data_root": data_root, "ann_file": ann_file, "logger": get_root_logger()}
    if split != "train":
        skipped = SkippedImages(collate or to_eval_collated)
        loader = build_loader(settings, **files, **place, collate=skipped)
        return _for_evaluation(loader, split, dataset, skipped)
    if collate is None:
        collate = to_collated
        if settings.log_slots:
            log_path = Path(cfg.work_dir) / f"slots_rank{place['rank']}.jsonl"
            resumed = lambda: bool(cfg.get("resume_from"))  # noqa: E731
            collate = SlotLog(log_path, place["rank"], append=resumed, then=to_collated)
    seed = (cfg.get("seed") or 0) if seed is None else seed
    loader = build_loader(settings, **files, **place, seed=seed, collate=collate)
    wrapped = DaliDataLoader(loader)
    wrapped.CLASSES = settings.class_names
    wrapped.runner_hooks.append((DaliStreamStateHook(loader, cfg), "ABOVE_NORMAL"))
    wrapped.checkpoint_problem = functools.partial(checkpoint_problem, loader)
    log_schedule(cfg, loader)
    return wrapped


def _for_evaluation(
    loader: DaliStreamLoader, split: str, dataset: Any, skipped: SkippedImages
) -> DaliDataLoader:
    """The test loader over upstream's test ``dataset`` (or the frame count), checked to be its set."""
    if dataset is None:
        dataset = FrameCount(len(loader.frames), list(loader.cfg.class_names))
    elif len(loader.frames) != len(dataset):
        raise RuntimeError(
            f"the DALI test loader read {len(loader.frames)} frames of data.{split}, upstream's dataset "
            f"{len(dataset)}: they must be the same set (data.{split}.load_interval, a filtered info file?)"
        )
    get_root_logger().info(
        f"DALI test loader ({split}): {len(loader.frames)} frames, test_sharding={loader.cfg.mode.sharding}; "
        f"this rank {loader.rank} of {loader.world_size}: {len(loader)} frames"
    )
    return DaliDataLoader(loader, dataset, skipped)


def require_distributed_for(mode: SamplingMode) -> None:
    """The epoch-based training modes reproduce upstream's distributed sampler. Without a process
    group upstream's ``build_dataloader`` takes mmdet's ``GroupSampler``, whose order comes from the
    main process's global ``np.random`` (shared with the model's own draws): the loader refuses that
    case."""
    if mode.needs_process_group and not (dist.is_available() and dist.is_initialized()):
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
        replicate=loader.sampler.replicate,
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
