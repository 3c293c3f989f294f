"""The structured output iterator: plain torch/numpy batches in the layout of the collated original."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .config import LoaderConfig, loader_config_from
from .infos import Frame, load_frames
from .pipeline import GEOMETRY, INFO, BadImageError, ImageSource, build_pipeline
from .plan import BatchPlanner
from .sequences import StreamSampler, group_flags
from .targets import read_record, split_geometry

# StreamPETR's collect_keys: per-frame geometry and timing, stacked with a T=1 axis.
COLLECT_KEYS = (
    "lidar2img",
    "intrinsics",
    "extrinsics",
    "timestamp",
    "img_timestamp",
    "ego_pose",
    "ego_pose_inv",
)
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

    ``next()`` only hands over a batch that is ready: the pixels come from DALI's prefetch queue and
    the targets were computed beside them in the external source (in its worker process when
    ``py_num_workers > 0``). ``img`` is DALI's own output buffer, not a copy; the tensor owns it
    (DALI's dynamic executor never reuses a buffer that is still referenced), so every returned
    tensor stays valid for as long as it is kept, across later ``next()`` calls and ``close()``.
    With ``device_id`` set the images are a CUDA tensor on that GPU, written on the current
    CUDA stream.
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
        self.cfg, self.rank, self.world_size, self.seed = cfg, rank, world_size, seed
        self.device_id = device_id
        ann = Path(ann_file) if ann_file else Path(data_root) / Path(cfg.ann_file).name
        self.frames: list[Frame] = load_frames(ann, data_root, cfg.class_names)
        self.n_cams = len(self.frames[0].cam_names)
        self.sampler_args = dict(
            flags=group_flags([f.has_sweeps for f in self.frames], cfg.seq_split_num),
            batch_size=cfg.samples_per_gpu,
            rank=rank,
            world_size=world_size,
            seed=seed,
            mode="replicate" if cfg.replicate_dataset_per_gpu else "shard",
            offset_per_rank=cfg.offset_order_per_rank,
        )
        self.sampler = StreamSampler(**self.sampler_args)
        self.planner = BatchPlanner(self.sampler, cfg, seed)
        self.iteration = 0
        self.bad_images = 0

    # -- DataLoader protocol -------------------------------------------------------------------
    def __iter__(self) -> DaliStreamLoader:
        return self

    def __len__(self) -> int:
        """Like the original loader: the number of frames (the stream itself is infinite)."""
        return len(self.frames)

    def __next__(self) -> dict[str, Any]:
        if self._pipe is None:
            source = ImageSource(self.cfg, self.sampler_args, self.seed, self.frames, self.iteration)
            self._pipe = build_pipeline(source, self.n_cams, self.device_id, self.seed)
        try:
            images, rows, records = self._pipe.run()
        except Exception as exc:
            raise self._diagnose(exc) from exc
        batch = self._assemble(images, rows, records)
        self.iteration += 1
        return batch

    def close(self) -> None:
        """Stop the pipeline and its worker processes."""
        if self._pipe is not None:
            pipe, self._pipe = self._pipe, None
            pool = getattr(pipe, "_py_pool", None)
            if pool is not None:
                pool.close()
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
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        mine = self.state_dict()
        for key in ("version", "seed", "rank", "world_size", "mode", "stream_seed", "groups_num", "frames"):
            if state.get(key) != mine[key]:
                raise ValueError(
                    f"loader state does not match this loader: {key}={state.get(key)!r}, here {mine[key]!r}"
                )
        self.close()
        self.iteration = int(state["iteration"])

    # -- internals ---------------------------------------------------------------------------------
    def _to_torch(self, tensor_list) -> torch.Tensor:
        """The batch of images as one torch tensor. Host memory: DALI's buffer itself (DLPack, no
        copy; the tensor keeps it alive). GPU: one device copy into a tensor of torch's allocator,
        on torch's current stream of that device, so the model's kernels are ordered after it."""
        from nvidia.dali.tensors import TensorListCPU

        dense = tensor_list.as_tensor()
        if isinstance(tensor_list, TensorListCPU):
            return torch.from_dlpack(dense)
        from nvidia.dali.plugin.pytorch import feed_ndarray

        device = torch.device("cuda", self.device_id or 0)
        out = torch.empty(dense.shape(), dtype=torch.float32, device=device)
        feed_ndarray(dense, out, cuda_stream=torch.cuda.current_stream(device))
        return out

    def _assemble(self, images, rows, records) -> dict[str, Any]:
        """Wrap the pipeline's outputs into the batch: views and small copies, no per-frame work."""
        B, N = self.cfg.samples_per_gpu, self.n_cams
        samples = [read_record(records[b * N]) for b in range(B)]  # annotations + plan per sample
        if any(s["iteration"] != self.iteration for s in samples):
            got = sorted({s["iteration"] for s in samples})
            raise RuntimeError(f"the pipeline delivered iteration {got} as iteration {self.iteration}")
        img = self._to_torch(images)
        img = img.reshape(B, 1, N, *img.shape[1:])
        rows = np.asarray(rows.as_tensor())
        info = rows[:, INFO].astype(np.int64).reshape(B, N, 3)
        collect = split_geometry(rows[:, GEOMETRY], B, N)
        batch: dict[str, Any] = {"img": img}
        batch["prev_exists"] = torch.tensor([[float(s["prev_exists"])] for s in samples], dtype=torch.float32)
        for key in COLLECT_KEYS:
            batch[key] = torch.from_numpy(collect[key])
        for key in LIST_KEYS:
            if key in ("gt_bboxes_3d", "gt_labels_3d"):
                batch[key] = [[torch.from_numpy(s[key])] for s in samples]
            else:
                batch[key] = [[[torch.from_numpy(a) for a in s[key]]] for s in samples]
        fH, fW = self.cfg.aug.final_dim
        pad_shape = (img.shape[-2], img.shape[-1], 3)
        batch["img_metas"] = []
        batch["dali"] = []
        for b, sample in enumerate(samples):
            frame = self.frames[sample["index"]]
            h, w = int(info[b, 0, 0]), int(info[b, 0, 1])
            batch["img_metas"].append(
                [
                    {
                        "filename": list(frame.data_paths),
                        "ori_shape": (h, w, 3, N),
                        "img_shape": [(fH, fW, 3)] * N,
                        "pad_shape": [pad_shape] * N,
                        "scale_factor": 1.0,
                        "img_norm_cfg": {
                            "mean": np.array(self.cfg.mean, dtype=np.float32),
                            "std": np.array(self.cfg.std, dtype=np.float32),
                            "to_rgb": self.cfg.to_rgb,
                        },
                        "scene_token": frame.scene_token,
                    }
                ]
            )
            bad = [frame.cam_names[c] for c in range(N) if not info[b, c, 2]]
            self.bad_images += len(bad)
            batch["dali"].append(
                {"index": sample["index"], "token": frame.token, "draw": sample["draw"], "bad_cameras": bad}
            )
        return batch

    def _diagnose(self, exc: Exception) -> Exception:
        """Name the sample/camera/path behind a pipeline failure (the decoder's own error does not)."""
        if isinstance(exc, BadImageError) or "BadImageError" in str(exc):
            return (
                BadImageError(str(exc).strip().splitlines()[-1])
                if not isinstance(exc, BadImageError)
                else exc
            )
        from PIL import Image

        for iteration in range(self.iteration, self.iteration + self.cfg.prefetch_queue_depth + 1):
            for plan in self.planner.plan(iteration):
                frame = self.frames[plan.index]
                for cam, path in zip(frame.cam_names, frame.img_paths, strict=True):
                    try:
                        with Image.open(path) as im:
                            im.load()
                    except Exception as err:
                        return BadImageError(
                            f"sample {frame.token}, camera {cam}: cannot decode {path}: {err}"
                        )
        return exc


def build_loader(
    config: Any,
    data_root: str | Path,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    seed: int = 0,
    device_id: int | None = None,
    **overrides: Any,
) -> DaliStreamLoader:
    """Loader from a StreamPETR config (dict or mmcv Config). Rank / world size default to the
    initialised ``torch.distributed`` group, else (0, 1)."""
    if rank is None or world_size is None:
        dist = torch.distributed
        ready = dist.is_available() and dist.is_initialized()
        rank = dist.get_rank() if ready else 0
        world_size = dist.get_world_size() if ready else 1
    cfg = loader_config_from(config, **overrides)
    if cfg.device == "gpu" and device_id is None:
        device_id = torch.cuda.current_device()
    return DaliStreamLoader(cfg, data_root, rank=rank, world_size=world_size, seed=seed, device_id=device_id)
