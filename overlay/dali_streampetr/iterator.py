"""The structured output iterator: plain torch/numpy batches in the layout of the collated original."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .bad_images import BadImageLedger, UndecodableImageError, undecodable, worker_error
from .config import LoaderConfig, loader_config_from
from .frame_cache import load_frames
from .frame_sets import labelled_frames, scene_ids
from .infos import Frame
from .pipeline import GEOMETRY, INFO, ImageSource, build_pipeline
from .plan import BatchPlanner
from .sequences import group_flags
from .targets import read_record, split_geometry
from .training_mode import COLLECT_KEYS, STREAMING  # COLLECT_KEYS: per-frame, stacked on the T axis
from .validate import require_cuda
from .watchdog import AssemblyError, LoaderFaultError, PipelineWatchdog, build_within, worker_processes

STACKED_KEYS = ("img", "prev_exists", *COLLECT_KEYS)
LIST_KEYS = ("gt_bboxes_3d", "gt_labels_3d", "gt_bboxes", "gt_labels", "centers2d", "depths")
STATE_VERSION = 1


class DaliStreamLoader:
    """Drop-in for StreamPETR's streaming training DataLoader (plain structures; see
    :mod:`dali_streampetr.mmdet_adapter` for the DataContainer form).

    Each ``next()`` returns a dict with
    ``img`` (B, 1, N, 3, H, W) float32; ``lidar2img``/``intrinsics``/``extrinsics`` (B, 1, N, 4, 4)
    float32; ``timestamp`` (B, 1) and ``img_timestamp`` (B, 1, N) float64; ``ego_pose``/``ego_pose_inv``
    (B, 1, 4, 4) float32; ``prev_exists`` (B, 1) float32; B x 1 nested lists ``gt_bboxes_3d`` ((n, 9)
    float32), ``gt_labels_3d`` ((n,) int64; float64 when the info has no valid box, as upstream); B x 1 x N
    nested lists ``gt_bboxes`` ((k, 4) float32; ``(0,)`` for a camera without 2D boxes in the info),
    ``gt_labels`` ((k,) int64), ``centers2d`` ((k, 2) float32), ``depths`` ((k,) float32); ``img_metas``
    B x 1 dicts; and ``dali`` (per sample: frame index, token, draw, bad cameras), which is ours.

    ``next()`` only hands over a batch that is ready: the pixels come from DALI's prefetch queue, the
    targets were computed beside them in the external source (in its worker process when
    ``py_num_workers > 0``), and the batch was taken from DALI and assembled on the watchdog's
    thread as soon as the previous one was handed over, while the model trained. ``img`` is DALI's
    own output buffer, not a copy; the tensor owns it (DALI's dynamic executor never reuses a
    buffer that is still referenced), so every returned tensor stays valid for as long as it is
    kept, across later ``next()`` calls and ``close()``. With ``device_id`` set the images are a
    CUDA tensor on that GPU, copied in ``next()`` on the training thread's current CUDA stream.

    Faults: ``next()`` never waits longer than ``batch_timeout_s`` (a dead worker raises at once);
    after any error the pipeline is discarded and the next ``next()`` rebuilds it at the failed
    iteration, so every batch carries the pixels of its own frames. ``on_bad_image='skip'`` serves
    unreadable or undecodable images black, without their 2D annotations, logged on ``logger``.
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
    ) -> None:
        self._pipe = None
        self._watchdog: PipelineWatchdog | None = None
        self.cfg, self.rank, self.world_size, self.seed = cfg, rank, world_size, seed
        self.device_id = device_id
        require_cuda(cfg.device)
        ann = Path(ann_file) if ann_file else Path(data_root) / Path(cfg.ann_file).name
        self.frames: list[Frame] = load_frames(
            ann, data_root, cfg.class_names, trusted_pickle=cfg.trusted_pickle
        )
        self.n_cams = len(self.frames[0].cam_names)
        self.sampler_args = sampler_args(cfg, self.frames, rank=rank, world_size=world_size, seed=seed)
        self.planner = BatchPlanner.from_args(self.sampler_args, cfg, seed)
        self.sampler = self.planner.sampler
        self.iteration = 0
        self._iter_start = 0  # the iteration at which the caller's last iter() began (epoch modes)
        self.logger = logging.getLogger("dali_streampetr")  # the mmdet adapter sets the runner's logger
        self.skipped = BadImageLedger(cfg.max_bad_images)
        self._replaced: set[str] = set()  # undecodable files served black (skip)
        # Applied to every batch on the training thread, before the next batch is started (the
        # mmdet adapter's DataContainer wrap): the run-ahead never competes with the hand-over.
        self.collate: Callable[[dict[str, Any]], Any] = lambda batch: batch

    @property
    def bad_images(self) -> int:
        """Images served black so far (``on_bad_image='skip'``)."""
        return self.skipped.images

    # -- DataLoader protocol -------------------------------------------------------------------
    def __iter__(self) -> DaliStreamLoader:
        self._iter_start = self.iteration
        return self

    def __len__(self) -> int:
        """Like the original loader: streaming, the number of frames (the stream itself is infinite);
        epoch-based modes, the batches of one epoch (``DistributedGroupSampler``'s length / batch)."""
        return len(self.sampler) if self.cfg.mode.epoch_based else len(self.frames)

    def __next__(self) -> dict[str, Any]:
        if (
            self.cfg.mode.epoch_based
            and self.iteration % len(self) == 0
            and self.iteration != self._iter_start
        ):
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
                if isinstance(error, UndecodableImageError) and self.cfg.on_bad_image == "skip":
                    if not set(error.paths) - self._replaced:
                        raise error from exc
                    self._replaced.update(error.paths)  # rebuild at this iteration, those files black
                    continue
                raise error from exc
            try:
                img = self._to_torch(batch["img"])
                B, T = self.cfg.samples_per_gpu, self.cfg.mode.queue_length
                batch["img"] = img.reshape(B, T, self.n_cams, *img.shape[1:])
                self.skipped.record(batch, self.frames, self.logger)
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
            self.cfg, self.sampler_args, self.seed, self.frames, self.iteration, frozenset(self._replaced)
        )
        self._pipe = build_within(
            lambda: build_pipeline(source, self.n_cams, self.device_id, self.seed),
            self.cfg.start_timeout_s,
            self.iteration,
        )
        self._watchdog = PipelineWatchdog(self._pipe, self.cfg.batch_timeout_s, self._assemble)

    def _discard(self) -> None:
        """Drop a pipeline after an error. Its prefetch queue holds later iterations, so it must
        not be asked again. Workers are killed rather than asked to stop: DALI's graceful stop can
        block on a queue lock a dead worker held."""
        pipe, watchdog = self._pipe, self._watchdog
        self._pipe = self._watchdog = None
        if pipe is None:
            return
        for proc in worker_processes(pipe):
            if proc.exitcode is None:
                proc.kill()
        for proc in worker_processes(pipe):
            proc.join(5)
        if not watchdog.stuck:
            watchdog.stop()

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
        pool = getattr(pipe, "_py_pool", None)
        if pool is not None:
            pool.close()
        # Stop DALI's executor threads now, as the pipeline's __del__ would once the last reference
        # (a cycle, a batch) is gone: a thread of this pipeline still running while the next loader
        # forks its workers can hand the child a lock it holds, and the child's start then hangs.
        shutdown = getattr(pipe, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        del pipe

    def __enter__(self) -> DaliStreamLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # -- resume ----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Position in the data stream. Draws and sampler are functions of the iteration, so this is
        all a resumed run needs to continue the exact stream."""
        return {
            "version": STATE_VERSION,
            "iteration": self.iteration,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "mode": self.sampler.mode,
            "stream_seed": self.sampler.seed,
            "groups_num": self.sampler.groups_num,
            "frames": len(self.frames),
            "training_mode": self.cfg.mode.name,
            "epoch": self.iteration // len(self) if self.cfg.mode.epoch_based else 0,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        mine = self.state_dict()
        for key in ("version", "seed", "rank", "world_size", "mode", "stream_seed", "groups_num", "frames"):
            if state.get(key) != mine[key]:
                raise ValueError(
                    f"loader state does not match this loader: {key}={state.get(key)!r}, here {mine[key]!r}"
                )
        theirs = state.get("training_mode", STREAMING)  # states written before the modes: streaming
        if theirs != mine["training_mode"]:
            raise ValueError(
                "loader state does not match this loader: "
                f"training_mode={theirs!r}, here {mine['training_mode']!r}"
            )
        self.close()
        self.iteration = int(state["iteration"])

    # -- internals ---------------------------------------------------------------------------------
    def _to_torch(self, dense) -> torch.Tensor:
        """The batch of images (DALI's dense tensor) as one torch tensor, on the training thread.
        Host memory: DALI's buffer itself (DLPack, no copy; the tensor keeps it alive). GPU: one
        device copy into a tensor of torch's allocator, on torch's current stream of that device
        (the training thread's), so the model's kernels are ordered after it."""
        from nvidia.dali.tensors import TensorCPU

        if isinstance(dense, TensorCPU):
            return torch.from_dlpack(dense)
        from nvidia.dali.plugin.pytorch import feed_ndarray

        device = torch.device("cuda", self.device_id or 0)
        out = torch.empty(dense.shape(), dtype=torch.float32, device=device)
        feed_ndarray(dense, out, cuda_stream=torch.cuda.current_stream(device))
        return out

    def _assemble(self, outputs, iteration: int) -> dict[str, Any]:
        """Wrap the pipeline's outputs of ``iteration`` into the batch (on the watchdog's thread, ahead
        of the training thread): views and small copies, no per-frame work. ``img`` stays DALI's
        dense tensor; ``next()`` makes it a torch tensor."""
        images, rows, records = outputs
        B, T, N = self.cfg.samples_per_gpu, self.cfg.mode.queue_length, self.n_cams
        F = B * T  # frames in the batch, sample by sample, oldest first
        plans = [read_record(records[f * N]) for f in range(F)]  # annotations + plan per frame
        if any(p["iteration"] != iteration for p in plans):
            got = sorted({p["iteration"] for p in plans})
            raise RuntimeError(f"the pipeline delivered iteration {got} as iteration {iteration}")
        samples = [plans[b * T : (b + 1) * T] for b in range(B)]
        img = images.as_tensor()
        rows = np.asarray(rows.as_tensor())
        info = rows[:, INFO].astype(np.int64).reshape(F, N, 3)
        collect = split_geometry(rows[:, GEOMETRY], F, N)
        batch: dict[str, Any] = {"img": img}
        batch["prev_exists"] = torch.tensor(
            [[float(p["prev_exists"]) for p in sample] for sample in samples], dtype=torch.float32
        )
        for key in COLLECT_KEYS:
            batch[key] = torch.from_numpy(collect[key].reshape(B, T, *collect[key].shape[2:]))
        for key in LIST_KEYS:
            if key in ("gt_bboxes_3d", "gt_labels_3d"):
                batch[key] = [[torch.from_numpy(p[key]) for p in sample] for sample in samples]
            else:
                batch[key] = [[[torch.from_numpy(a) for a in p[key]] for p in sample] for sample in samples]
        fH, fW = self.cfg.aug.final_dim
        *_, height, width = img.shape()
        pad_shape = (height, width, 3)
        norm = {
            "mean": np.array(self.cfg.mean, dtype=np.float32),
            "std": np.array(self.cfg.std, dtype=np.float32),
            "to_rgb": self.cfg.to_rgb,
        }
        batch["img_metas"], batch["dali"] = [], []
        for b, sample in enumerate(samples):
            metas, records = [], []
            for t, plan in enumerate(sample):
                f = b * T + t
                frame = self.frames[plan["index"]]
                shown = next(
                    (c for c in range(N) if info[f, c, 2]), 0
                )  # a skipped camera has the config's size
                h, w = int(info[f, shown, 0]), int(info[f, shown, 1])
                metas.append(
                    {
                        "filename": list(frame.data_paths),
                        "ori_shape": (h, w, 3, N),
                        "img_shape": [(fH, fW, 3)] * N,
                        "pad_shape": [pad_shape] * N,
                        "scale_factor": 1.0,
                        "img_norm_cfg": {k: v.copy() if hasattr(v, "copy") else v for k, v in norm.items()},
                        "scene_token": frame.scene_token,
                    }
                )
                bad = [frame.cam_names[c] for c in range(N) if not info[f, c, 2]]
                records.append(
                    {"index": plan["index"], "token": frame.token, "draw": plan["draw"], "bad_cameras": bad}
                )
            batch["img_metas"].append(metas)
            # the sample's own record is its last (sampled) frame's, with every frame's and the queue draws
            batch["dali"].append(
                {
                    **records[-1],
                    "frames": records,
                    "rejected": sample[-1].get("rejected", ()),
                    "shuffles": sample[-1].get("shuffles", ()),
                }
            )
        return batch

    def _diagnose(self, exc: Exception) -> Exception:
        """Name what is behind a pipeline failure: a dead or stalled worker (the watchdog's error),
        our own image error from the source, or the file(s) the decoder failed on (decoded with PIL:
        the decoder's error names none) among this and the prefetched iterations."""
        if isinstance(exc, LoaderFaultError):
            return exc
        own = worker_error(exc)
        if own is not None:
            return own
        plans = range(self.iteration, self.iteration + self.cfg.prefetch_queue_depth + 1)
        found = undecodable(self.frames, dict.fromkeys(p.index for i in plans for p in self.planner.plan(i)))
        if not found:
            return exc
        frame, cam, path, reason = found[0]
        more = f" (and {len(found) - 1} more: {[f[2] for f in found[1:]]})" if len(found) > 1 else ""
        return UndecodableImageError(
            f"sample {frame.token}, camera {cam}: cannot decode {path}: {reason}{more}; the pipeline "
            f"stopped at iteration {self.iteration}",
            [f[2] for f in found],
        )


def sampler_args(
    cfg: LoaderConfig, frames: Sequence[Frame], *, rank: int, world_size: int, seed: int
) -> dict[str, Any]:
    """What the planner is rebuilt from (in the external source's worker too): the sampler's kind and
    arguments; outside streaming also the per-frame label and scene facts the queues need."""
    split = "replicate" if cfg.replicate_dataset_per_gpu else "shard"
    common = {
        "batch_size": cfg.samples_per_gpu,
        "rank": rank,
        "world_size": world_size,
        "seed": seed,
        "mode": split,
    }
    if not cfg.mode.epoch_based:
        flags = group_flags([frames[i].has_sweeps for i in range(len(frames))], cfg.seq_split_num)
        return {"kind": "stream", "flags": flags, **common, "offset_per_rank": cfg.offset_order_per_rank}
    labelled = labelled_frames(frames, cfg.point_cloud_range, len(cfg.class_names))
    if cfg.mode.filter_empty_gt and not labelled.any():
        raise ValueError(
            "data.train.filter_empty_gt=True but no frame of the info file has a label left after the "
            "range and class filters: upstream's __getitem__ would draw replacements forever; set "
            "filter_empty_gt=False"
        )
    flags = np.zeros(len(frames), dtype=np.int64)  # Custom3DDataset's flag outside seq_mode: all zero
    return {"kind": "epoch", "flags": flags, **common, "labelled": labelled, "scenes": scene_ids(frames)}


def build_loader(
    config: Any,
    data_root: str | Path,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    seed: int = 0,
    device_id: int | None = None,
    ann_file: str | Path | None = None,
    **overrides: Any,
) -> DaliStreamLoader:
    """Loader from a StreamPETR config (dict or mmcv Config). Rank / world size default to the
    initialised ``torch.distributed`` group, else (0, 1). ``ann_file`` is the info pickle as given
    (training passes ``data.train.ann_file``, as upstream's dataset reads it); without it, the file
    named like the config's ``ann_file`` in ``data_root``."""
    if rank is None or world_size is None:
        dist = torch.distributed
        ready = dist.is_available() and dist.is_initialized()
        rank = dist.get_rank() if ready else 0
        world_size = dist.get_world_size() if ready else 1
    cfg = loader_config_from(config, **overrides)
    require_cuda(cfg.device)
    if cfg.device == "gpu" and device_id is None:
        device_id = torch.cuda.current_device()
    return DaliStreamLoader(
        cfg, data_root, rank=rank, world_size=world_size, seed=seed, device_id=device_id, ann_file=ann_file
    )
