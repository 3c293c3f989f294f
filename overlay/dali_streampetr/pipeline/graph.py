"""The DALI graph: encoded images + per-image parameters in, normalised CHW float32 images out, with
the per-frame training targets (computed by the external source, :mod:`.source`) passed through.

Per image: decode (only the rows that survive the bottom crop, when ``roi_decode``), antialiased
cubic resize of exactly the crop window (crop before resize; PIL's pixel mapping), black padding
where the crop leaves the resized image, horizontal flip + normalisation (+ BGR->RGB via the decoder's
output type), padding to the size divisor. ``image_path="fast"`` changes the resampling and where
the black padding is written, never the parameter rows (:func:`image_ops`).

The build (which forks and starts the python workers) runs under a deadline: :func:`build_within`.
Which GPU the pipeline runs on, and the one check that there is one: :func:`pipeline_device`
(no mmcv: the GPU check kit imports it too).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any

from ..batch.wire import DECODE_SHAPE, DECODE_START, FLIP, OUT_SIZE, ROI_END, ROI_START
from ..settings import ConfigValueError
from .pipeline_errors import PipelineStartError
from .source import ImageSource
from .watchdog import forking_workers


def local_device_id(device: str) -> int | None:
    """``LOCAL_RANK`` (0 when unset) when DALI runs on the GPU (``device='gpu'``), else None: the
    launcher's local rank is the GPU this process trains on, so the loader's images land there."""
    return int(os.environ.get("LOCAL_RANK", 0)) if device == "gpu" else None


def pipeline_device(device: str, device_id: int | None) -> int | None:
    """The GPU the loader's images land on: ``device_id`` as given (None: host memory); with
    ``device='gpu'`` CUDA must be available in this process (else :class:`ConfigValueError` naming
    the key) and the current CUDA device is the default."""
    if device != "gpu":
        return device_id
    import torch

    if not torch.cuda.is_available():
        raise ConfigValueError(
            "data_loading_config.device='gpu' needs CUDA, but torch.cuda.is_available() is False in this "
            "process (no NVIDIA driver/GPU visible): use data_loading_config.device='cpu'"
        )
    return torch.cuda.current_device() if device_id is None else device_id


def dali_queue_depth(prefetch_queue_depth: int) -> int:
    """DALI's own queue depth for the loader's ``prefetch_queue_depth``: the run-ahead (:mod:`.watchdog`)
    holds one of the batches prepared ahead, DALI the others (at least one)."""
    return max(1, prefetch_queue_depth - 1)


def image_ops(image_path: str, mean: tuple, std: tuple, final_dim: tuple[int, int]) -> tuple[dict, dict]:
    """The resize and crop_mirror_normalize arguments of ``image_path`` (beyond the per-image ones).

    ``exact``: antialiased cubic resize (closest to Pillow's bicubic), then a separate black pad to
    ``final_dim``. ``fast``: antialiased linear resize (half the time), the pad written by
    crop_mirror_normalize itself (one pass less, pixel-identical). Same pixels sampled, same targets."""
    from nvidia.dali import types

    if image_path == "exact":
        return {"interp_type": types.INTERP_CUBIC, "antialias": True}, {}
    if image_path != "fast":
        raise ValueError(f"image_path {image_path!r}: 'exact' or 'fast'")
    black = [-m / s for m, s in zip(mean, std, strict=True)]
    crop = {"crop": list(final_dim), "crop_pos_x": 0.0, "crop_pos_y": 0.0}
    return {"interp_type": types.INTERP_LINEAR, "antialias": True}, {
        **crop,
        "out_of_bounds_policy": "pad",
        "fill_values": black,
    }


def build_pipeline(source: ImageSource, n_cams: int, device_id: int | None, seed: int):
    """The DALI pipeline for ``samples_per_gpu * T * n_cams`` images per iteration (``T`` frames per
    sample: the mode's ``queue_length``).

    Outputs ``(images CHW float32, parameter rows float64, annotation records uint8)``, one sample
    per image. Images are on the GPU ``device_id`` when given, else in host memory. The dynamic
    executor gives every output a buffer of its own, so the loader hands them out without a copy.
    The worker is forked while no CUDA context exists (sharing the loader's memory: 150-400 MB less),
    else spawned (DALI refuses to fork once CUDA is initialised).
    """
    from nvidia.dali import backend, fn, pipeline_def, types

    cfg = source.cfg
    fH, fW = cfg.aug.final_dim
    gpu = cfg.device == "gpu"
    on_device = device_id is not None
    parallel = cfg.py_num_workers > 0
    fork = parallel and not backend.IsDriverInitialized()

    @pipeline_def(
        batch_size=cfg.samples_per_gpu * cfg.mode.queue_length * n_cams,
        num_threads=cfg.num_threads,
        device_id=device_id,
        seed=seed,
        exec_dynamic=True,
        prefetch_queue_depth=dali_queue_depth(cfg.prefetch_queue_depth),
        py_num_workers=max(1, cfg.py_num_workers),
        py_start_method="fork" if fork else "spawn",
    )
    def graph():
        extra = {"parallel": True, "prefetch_queue_depth": cfg.prefetch_queue_depth} if parallel else {}
        encoded, rows, records = fn.external_source(
            source=source, num_outputs=3, batch=True, batch_info=True, **extra
        )

        def field(part: slice | int, dtype):
            """A part of the parameter row (an element or a slice), cast for the operator."""
            return fn.cast(rows[part], dtype=dtype)

        decoder = {"device": "mixed" if gpu else "cpu", "output_type": types.RGB if cfg.to_rgb else types.BGR}
        if cfg.roi_decode:
            start, shape = field(DECODE_START, types.INT32), field(DECODE_SHAPE, types.INT32)
            img = fn.decoders.image_slice(encoded, start, shape, axis_names="HW", **decoder)
        else:
            img = fn.decoders.image(encoded, **decoder)
        resize, normalize = image_ops(cfg.image_path, cfg.mean, cfg.std, (fH, fW))
        img = fn.resize(
            img,
            size=field(OUT_SIZE, types.FLOAT),
            roi_start=field(ROI_START, types.FLOAT),
            roi_end=field(ROI_END, types.FLOAT),
            **resize,
        )
        if not normalize:
            img = fn.pad(img, axis_names="HW", shape=[fH, fW])
        img = fn.crop_mirror_normalize(
            img,
            mirror=field(FLIP, types.INT32),
            mean=list(cfg.mean),
            std=list(cfg.std),
            output_layout="CHW",
            dtype=types.FLOAT,
            **normalize,
        )
        if fH % cfg.size_divisor or fW % cfg.size_divisor:
            img = fn.pad(img, axis_names="HW", align=cfg.size_divisor, shape=[1, 1])
        if on_device and not gpu:
            img = img.gpu()
        return img, rows, records

    pipe = graph()
    with forking_workers():  # forked workers end when this process dies (:mod:`.watchdog`)
        pipe.build()
    return pipe


def build_within(build: Callable[[], Any], timeout_s: float, iteration: int) -> Any:
    """``build()`` (which forks and starts the python workers) with a deadline: it stays on the
    calling thread (a fork from a helper thread can inherit a held lock), and a timer kills the
    workers started meanwhile once ``timeout_s`` has passed; the failure that makes is raised as
    :class:`PipelineStartError`. The build's own errors are raised as is.
    """
    before = set(multiprocessing.active_children())
    state = threading.Lock()
    killed: list[int] = []
    finished = False

    def expire() -> None:
        with state:
            if finished:
                return
            for proc in multiprocessing.active_children():
                if proc not in before and proc.pid not in killed:
                    killed.append(proc.pid)
                    proc.kill()
            if -1 not in killed:
                killed.append(-1)  # expired, even when no worker had started
        again = threading.Timer(0.2, expire)  # a worker forked after the deadline (a loaded host) too
        again.daemon = True
        again.start()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    try:
        pipe = build()
    except BaseException as exc:
        with state:
            finished = True
            expired = bool(killed)
        if expired:
            pids = [pid for pid in killed if pid != -1]
            raise PipelineStartError(
                f"the DALI pipeline for iteration {iteration} was not built within "
                f"data_loading_config.start_timeout_s={timeout_s:g} s (stage: pipeline build and python "
                f"worker start-up; worker process(es) {pids} killed). A worker that hangs while it starts "
                "(a stopped process, a hung file system, no room in /dev/shm) or a host too loaded to start "
                "one looks like this: check the host, raise start_timeout_s if the start is legitimately "
                "this slow, or try data_loading_config.py_num_workers=0. The next next() builds again."
            ) from exc
        raise
    with state:
        finished = True
    timer.cancel()
    return pipe
