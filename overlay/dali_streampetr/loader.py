"""The DALI loader of every split: the DataLoader protocol around a pipeline it builds, runs one batch
ahead, rebuilds after a failure and closes (batches: :mod:`.batch.assembly`; faults:
:mod:`.pipeline.failures`; resume: :mod:`.resume`), and its builder without mmcv,
:func:`build_loader` (either split; the files given, or the config's)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from .batch.assembly import BatchAssembler
from .config.reader import loader_config_from
from .frames.records import Frame
from .frames.store import load_frames
from .pipeline.failures import BadImagePolicy, diagnose
from .pipeline.graph import build_pipeline, build_within, pipeline_device
from .pipeline.pipeline_errors import AssemblyError
from .pipeline.source import ImageSource
from .pipeline.watchdog import PipelineWatchdog, worker_processes
from .resume import check_state, loader_state
from .settings import LoaderConfig

Collate = Callable[[dict[str, Any]], Any]


def plain(batch: dict[str, Any]) -> dict[str, Any]:
    """The default collate: the plain batch (:mod:`.batch_schema`)."""
    return batch


class DaliStreamLoader:
    """Drop-in for StreamPETR's training DataLoader, in its three training modes, and for its test
    DataLoader (``split='test'``/``'val'`` of :func:`build_loader`: the test order and sharding,
    the deterministic test resize and crop, one pass per ``iter()``, the pipeline closed at its end).

    ``next()`` returns ``collate(batch)`` (:mod:`.batch_schema`; ``collate`` runs on the training
    thread, e.g. :mod:`.runner.collate`) of a batch already run and assembled on the watchdog's
    thread while the model trained. ``img`` is DALI's own output buffer, owned by the tensor (the
    dynamic executor never reuses a referenced buffer): valid across later ``next()`` and
    ``close()``. With ``device_id`` (``device='gpu'``: the current CUDA device by default) the
    images are a CUDA tensor there, copied on the training thread's current stream.

    Faults: ``next()`` waits at most ``batch_timeout_s`` (a dead worker raises at once); after any
    error the next ``next()`` rebuilds the pipeline at the failed iteration.
    ``on_bad_image='skip'`` serves unreadable images black, without their 2D annotations.
    """

    def __init__(
        self,
        cfg: LoaderConfig,
        data_root: str | Path,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        device_id: int | None = None,
        ann_file: str | Path | None = None,
        collate: Collate = plain,
        logger: logging.Logger | None = None,
    ) -> None:
        self._pipe = None
        self._watchdog: PipelineWatchdog | None = None
        self.cfg, self.rank, self.world_size, self.seed = cfg, rank, world_size, seed
        self.device_id = pipeline_device(cfg.device, device_id)
        ann = Path(ann_file) if ann_file else Path(data_root) / Path(cfg.ann_file).name
        self.frames: list[Frame] = load_frames(
            ann, data_root, cfg.class_names, trusted_pickle=cfg.trusted_pickle
        )
        self.n_cams = len(self.frames[0].cam_names)
        self.planner = cfg.mode.planner(cfg, self.frames, rank=rank, world_size=world_size, seed=seed)
        self.sampler = self.planner.sampler
        self.iteration = 0
        self._iter_start = 0  # the iteration at which the caller's last iter() began (epoch modes)
        self.logger = logger or logging.getLogger("dali_streampetr")
        self.bad_image_policy = BadImagePolicy(cfg.on_bad_image, cfg.max_bad_images)
        self.assembler = BatchAssembler(cfg, self.frames, self.n_cams)
        self.collate = collate

    @property
    def bad_images(self) -> int:
        """Images served black so far (``on_bad_image='skip'``)."""
        return self.bad_image_policy.images

    # -- DataLoader protocol -------------------------------------------------------------------
    def __iter__(self) -> DaliStreamLoader:
        self._iter_start = self.iteration
        return self

    def __len__(self) -> int:
        """As the original loader's: streaming, the number of frames (the stream is infinite); the
        epoch-based modes, the batches of one epoch (test mode: this rank's frames of one pass)."""
        return len(self.sampler) if self.cfg.mode.epoch_based else len(self.frames)

    def __next__(self) -> Any:
        if self.cfg.mode.epoch_based and (
            len(self) == 0  # a test rank without a frame (more ranks than scenes): its pass ends at once
            or (self.iteration % len(self) == 0 and self.iteration != self._iter_start)
        ):
            if self.cfg.mode.close_after_pass:
                self.close()  # one pass evaluated: no worker waits through the training until the next
            raise StopIteration  # the end of an epoch; the next iter() starts the next one
        while True:
            if self._pipe is None:
                self._build()
            try:
                batch = self._watchdog.run(self.iteration)
            except AssemblyError as exc:
                self._discard()  # the pipeline is one batch ahead now: rebuild on retry
                raise exc.error from None  # the assembly's own error, as if raised here
            except Exception as exc:
                self._discard()
                error = self._diagnose(exc)
                if self.bad_image_policy.retry(error):
                    continue  # rebuild at this iteration, those files black
                raise error from exc
            try:
                batch = self.assembler.hand_over(batch, self.device_id)
                self.bad_image_policy.record(batch, self.frames, self.logger)
                batch = self.collate(batch)
            except Exception:
                self._discard()
                raise
            self.iteration += 1
            self._watchdog.request(self.iteration)  # run and assemble the next batch while this one trains
            return batch

    def _build(self) -> None:
        """A new pipeline whose first batch is ``self.iteration``."""
        source = ImageSource(
            self.cfg, self.planner, self.frames, self.iteration, frozenset(self.bad_image_policy.replaced)
        )
        self._pipe = build_within(
            lambda: build_pipeline(source, self.n_cams, self.device_id, self.seed),
            self.cfg.start_timeout_s,
            self.iteration,
        )
        self._watchdog = PipelineWatchdog(self._pipe, self.cfg.batch_timeout_s, self.assembler.assemble)

    def _discard(self) -> None:
        """Drop a pipeline after an error (its prefetch queue holds later iterations). Workers are
        killed, not stopped: DALI's graceful stop can block on a lock a dead worker held. Its threads
        are stopped before the rebuild forks (see :func:`shut_down`), unless the run thread is stuck
        inside ``pipe.run()``, which nothing ends: then it is left as it is."""
        pipe, watchdog = self._pipe, self._watchdog
        self._pipe = self._watchdog = None
        workers = worker_processes(pipe)
        for proc in workers:
            if proc.exitcode is None:
                proc.kill()
        for proc in workers:
            proc.join(5)
        if watchdog.stuck:
            return
        watchdog.stop()
        # not the pool: its close joins an observer thread that can block on a killed worker's lock
        shut_down(pipe, pool=False)

    def worker_pids(self) -> list[int]:
        """Pids of the current pipeline's python worker processes (empty before the first batch)."""
        return [p.pid for p in worker_processes(self._pipe)] if self._pipe is not None else []

    def close(self) -> None:
        """Stop the pipeline and its worker processes."""
        if self._pipe is None:
            return
        if not self._watchdog.settle():  # a run-ahead that does not end
            self._discard()
            return
        pipe, self._pipe = self._pipe, None
        self._watchdog.stop()
        self._watchdog = None
        shut_down(pipe)

    def __enter__(self) -> DaliStreamLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # -- resume ----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Position in the data stream and what it depends on (:data:`.resume.FIELDS`)."""
        return loader_state(self)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue at ``state``'s iteration; :class:`~.resume.LoaderStateMismatch` (naming the
        field and the fix) when the state is of another stream."""
        check_state(state, self.state_dict())
        self.close()
        self.iteration = int(state["iteration"])

    def _diagnose(self, exc: Exception) -> Exception:
        """:func:`.pipeline.failures.diagnose` over this and the prefetched iterations' frames."""
        iterations = range(self.iteration, self.iteration + self.cfg.prefetch_queue_depth + 1)
        planned = (p.index for i in iterations for p in self.planner.plan(i))
        return diagnose(exc, self.frames, planned, self.iteration)


def shut_down(pipe: Any, pool: bool = True) -> None:
    """Close the worker pool (``pool``) and stop DALI's executor threads now, not at the pipeline's
    ``__del__``: a thread still running when the next pipeline forks can hand the child a lock, and
    the child hangs. Only when no thread is inside ``pipe.run()``."""
    workers = getattr(pipe, "_py_pool", None) if pool else None
    if workers is not None:
        workers.close()
    shutdown = getattr(pipe, "_shutdown", None)
    if shutdown is not None:
        shutdown()


def build_loader(
    config: Any,
    data_root: str | Path | None = None,
    *,
    split: str = "train",
    rank: int | None = None,
    world_size: int | None = None,
    seed: int = 0,
    device_id: int | None = None,
    ann_file: str | Path | None = None,
    collate: Collate = plain,
    logger: logging.Logger | None = None,
    **overrides: Any,
) -> DaliStreamLoader:
    """The loader of ``data.<split>`` from a StreamPETR config (dict or mmcv Config) or a
    :class:`~.settings.LoaderConfig` read from it already. Without mmcv.

    Files: without ``data_root`` the config's own (``data.<split>.ann_file`` as given, images under
    ``data.<split>.data_root``); with it, images there and ``ann_file``, else the info file named
    like the config's in ``data_root``. Rank / world size default to the ``torch.distributed``
    group, else (0, 1). ``overrides``: ``data_loading_config`` keys."""
    if rank is None or world_size is None:
        dist = torch.distributed
        ready = dist.is_available() and dist.is_initialized()
        rank = dist.get_rank() if ready else 0
        world_size = dist.get_world_size() if ready else 1
    if isinstance(config, LoaderConfig):
        settings = replace(config, **overrides) if overrides else config
    else:
        settings = loader_config_from(config, split, **overrides)
    if data_root is None:
        data_root, ann_file = settings.data_root, ann_file or settings.ann_file
    return DaliStreamLoader(
        settings, data_root, rank=rank, world_size=world_size, seed=seed,
        device_id=device_id, ann_file=ann_file, collate=collate, logger=logger,
    )  # fmt: skip
