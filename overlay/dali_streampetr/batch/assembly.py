"""The batch (:mod:`..batch_schema`) from the pipeline's outputs of one iteration: the targets the
external source computed, ``img_metas``, our per-sample records, and the images as a torch tensor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..batch_schema import GEOMETRY_KEYS, META_FIELDS, PER_CAMERA_KEYS, PER_FRAME_KEYS
from ..frames.records import Frame
from ..settings import LoaderConfig
from .wire import read_record, read_rows


def img_meta(
    frame: Frame, cfg: LoaderConfig, source_size: tuple[int, int], pad_shape: tuple
) -> dict[str, Any]:
    """Upstream's ``img_metas`` entry of one frame (without the box type the mmdet adapter adds):
    ``source_size`` is the (height, width) of its images as read."""
    n = len(frame.cam_names)
    fH, fW = cfg.aug.final_dim
    meta = {
        "filename": list(frame.data_paths),
        "ori_shape": (*source_size, 3, n),
        "img_shape": [(fH, fW, 3)] * n,
        "pad_shape": [pad_shape] * n,
        "scale_factor": 1.0,
        "img_norm_cfg": {
            "mean": np.array(cfg.mean, dtype=np.float32),
            "std": np.array(cfg.std, dtype=np.float32),
            "to_rgb": cfg.to_rgb,
        },
        "scene_token": frame.scene_token,
    }
    return {k: meta[k] for k in META_FIELDS}  # in the schema's order


def images_to_torch(dense: Any, device_id: int | None) -> torch.Tensor:
    """The batch of images (DALI's dense tensor) as one torch tensor, on the training thread.
    Host memory: DALI's buffer itself (DLPack, no copy; the tensor keeps it alive). GPU: one
    device copy into a tensor of torch's allocator, on torch's current stream of that device
    (the training thread's), so the model's kernels are ordered after it."""
    from nvidia.dali.tensors import TensorCPU

    if isinstance(dense, TensorCPU):
        return torch.from_dlpack(dense)
    from nvidia.dali.plugin.pytorch import feed_ndarray

    device = torch.device("cuda", device_id or 0)
    out = torch.empty(dense.shape(), dtype=torch.float32, device=device)
    feed_ndarray(dense, out, cuda_stream=torch.cuda.current_stream(device))
    return out


class BatchAssembler:
    """Turns the pipeline's outputs into batches of ``cfg.samples_per_gpu`` samples of
    ``cfg.mode.queue_length`` frames of ``n_cams`` cameras: :meth:`assemble` ahead of the training
    thread (views and small copies, no per-frame work), :meth:`hand_over` on it."""

    def __init__(self, cfg: LoaderConfig, frames: Sequence[Frame], n_cams: int) -> None:
        self.cfg, self.frames, self.n_cams = cfg, frames, n_cams

    def assemble(self, outputs: Any, iteration: int) -> dict[str, Any]:
        """The batch of ``iteration`` from its ``(images, rows, records)``; ``img`` stays DALI's
        dense tensor until :meth:`hand_over`."""
        images, rows, records = outputs
        B, T, N = self.cfg.samples_per_gpu, self.cfg.mode.queue_length, self.n_cams
        F = B * T  # frames in the batch, sample by sample, oldest first
        plans = [read_record(records[f * N]) for f in range(F)]  # annotations + plan per frame
        if any(p["iteration"] != iteration for p in plans):
            got = sorted({p["iteration"] for p in plans})
            raise RuntimeError(f"the pipeline delivered iteration {got} as iteration {iteration}")
        samples = [plans[b * T : (b + 1) * T] for b in range(B)]
        img = images.as_tensor()
        info, collect = read_rows(np.asarray(rows.as_tensor()), F, N)  # per image: source H, W, ok
        batch: dict[str, Any] = {"img": img}
        batch["prev_exists"] = torch.tensor(
            [[float(p["prev_exists"]) for p in sample] for sample in samples], dtype=torch.float32
        )
        for key in GEOMETRY_KEYS:
            batch[key] = torch.from_numpy(collect[key].reshape(B, T, *collect[key].shape[2:]))
        for key in PER_FRAME_KEYS:
            batch[key] = [[torch.from_numpy(p[key]) for p in sample] for sample in samples]
        for key in PER_CAMERA_KEYS:
            batch[key] = [[[torch.from_numpy(a) for a in p[key]] for p in sample] for sample in samples]
        *_, height, width = img.shape()
        batch["img_metas"], batch["dali"] = [], []
        for b, sample in enumerate(samples):
            frames = [self.frames[plan["index"]] for plan in sample]
            per_image = info[b * T : (b + 1) * T]
            metas = []
            for frame, image in zip(frames, per_image, strict=True):
                shown = next((c for c in range(N) if image[c, 2]), 0)  # a black camera has the config's size
                size = (int(image[shown, 0]), int(image[shown, 1]))
                metas.append(img_meta(frame, self.cfg, size, (height, width, 3)))
            batch["img_metas"].append(metas)
            batch["dali"].append(self._record(iteration, sample, frames, per_image[:, :, 2]))
        return batch

    @staticmethod
    def _record(iteration: int, sample: list[dict], frames: list[Frame], ok: np.ndarray) -> dict[str, Any]:
        """Our record of a sample of ``iteration``: its own (last, sampled) frame's, with every frame's
        and the queue's draws."""
        per_frame = [
            {
                "index": plan["index"],
                "token": frame.token,
                "draw": plan["draw"],
                "bad_cameras": [frame.cam_names[c] for c in range(len(frame.cam_names)) if not ok[t, c]],
            }
            for t, (plan, frame) in enumerate(zip(sample, frames, strict=True))
        ]
        return {
            "iteration": iteration,
            **per_frame[-1],
            "frames": per_frame,
            "rejected": sample[-1].get("rejected", ()),
            "shuffles": sample[-1].get("shuffles", ()),
        }

    def hand_over(self, batch: dict[str, Any], device_id: int | None) -> dict[str, Any]:
        """Make ``img`` a torch tensor of shape (B, T, N, 3, H, W), on the training thread."""
        img = images_to_torch(batch["img"], device_id)
        B, T = self.cfg.samples_per_gpu, self.cfg.mode.queue_length
        batch["img"] = img.reshape(B, T, self.n_cams, *img.shape[1:])
        return batch
