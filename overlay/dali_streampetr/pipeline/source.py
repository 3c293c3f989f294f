"""The external source's batch callback: per iteration the planned frames' encoded images, their
decode/resample parameter rows and the frames' training targets."""

from __future__ import annotations

import os

import numpy as np

from ..batch.frame_targets import frame_targets
from ..batch.image_params import image_params, param_row
from ..batch.wire import annotation_records, geometry_rows
from ..config.settings import LoaderConfig
from ..sampling.plan import BatchPlanner
from .image_files import BadImageError, black_jpeg, check_same_size, image_size
from .lifeline import watch_owner


class ImageSource:
    """Batch callback of the external source: for iteration ``i`` (plus the resume offset) read the
    planned frames' encoded images, compute their decode/resample parameters and the frames' training
    targets (geometry and annotations, :mod:`..batch.wire`). With ``py_num_workers > 0`` this runs in
    DALI's worker process, off the training process. Picklable: the sampler is rebuilt in the worker.
    ``replaced``: paths known to be undecodable, served as a black image (``on_bad_image='skip'``)."""

    def __init__(
        self,
        cfg: LoaderConfig,
        sampler_args: dict,
        seed: int,
        frames: list,
        start_iteration: int,
        replaced: frozenset[str] = frozenset(),
    ):
        self.cfg, self.sampler_args, self.seed, self.start = cfg, sampler_args, seed, start_iteration
        self.replaced = replaced
        self.frames = frames  # read per sample: no per-frame object is held (a forked worker shares them)
        self._planner: BatchPlanner | None = None
        self._black: np.ndarray | None = None
        self.owner_pid = os.getpid()  # the loader's process: a spawned worker ends when it dies

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_planner": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        watch_owner(self.owner_pid)  # in a spawned worker (no-op in the loader's process)

    @property
    def planner(self) -> BatchPlanner:
        if self._planner is None:
            self._planner = BatchPlanner.from_args(self.sampler_args, self.cfg, self.seed)
        return self._planner

    def _read(self, token: str, cam: str, path: str) -> tuple[np.ndarray, tuple[int, int], bool]:
        try:
            if path in self.replaced:
                raise ValueError("the decoder failed on it (replaced by a black image)")
            data = np.fromfile(path, dtype=np.uint8)
            return data, image_size(data), True
        except (OSError, ValueError) as exc:
            if self.cfg.on_bad_image == "raise":
                raise BadImageError(f"sample {token}, camera {cam}: cannot use image {path}: {exc}") from exc
        if self._black is None:
            self._black = black_jpeg(self.cfg.aug.H, self.cfg.aug.W)
        return self._black, (self.cfg.aug.H, self.cfg.aug.W), False

    def __call__(self, batch_info) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """Per image: the encoded bytes, the parameter row (``DECODE_START`` ... ``GEOMETRY``) and the
        annotation record (:func:`..batch.wire.annotation_records`: the sample's, in its first camera)."""
        iteration = self.start + (batch_info if isinstance(batch_info, int) else batch_info.iteration)
        encoded, rows, records = [], [], []
        for sample in self.planner.plan(iteration):
            frame = self.frames[sample.index]
            token, cams, paths = frame.token, frame.cam_names, frame.img_paths
            reads = [self._read(token, cam, path) for cam, path in zip(cams, paths, strict=True)]
            check_same_size(token, cams, [size if ok else None for _, size, ok in reads])
            targets = frame_targets(frame, sample.draw, self.cfg)
            plan = {
                "iteration": iteration,
                "index": sample.index,
                "prev_exists": sample.prev_exists,
                "draw": sample.draw,
                "rejected": sample.rejected,
                "shuffles": sample.shuffles,
            }
            for (data, (h, w), ok), geometry in zip(reads, geometry_rows(targets), strict=True):
                p = image_params(sample.draw, h, w, self.cfg.aug.final_dim, self.cfg.roi_decode)
                encoded.append(data)
                rows.append(param_row(p, (h, w), ok, geometry))
            records += annotation_records(targets, len(cams), plan)
        return encoded, rows, records
