"""The DALI graph: encoded images + per-image parameters in, normalised CHW float32 images out, with
the per-frame training targets (computed by the external source, :mod:`.targets`) passed through.

Per image: decode (only the rows that survive the bottom crop, when ``roi_decode``), antialiased
cubic resize of exactly the crop window (crop before resize; PIL's pixel mapping), black padding
where the crop leaves the resized image, horizontal flip + normalisation (+ BGR->RGB via the decoder's
output type), padding to the size divisor.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass

import numpy as np

from .augment import AugDraw
from .config import LoaderConfig
from .frame_targets import frame_targets
from .lifeline import forking_workers, watch_owner
from .plan import BatchPlanner
from .targets import GEOMETRY_WIDTH, annotation_records, geometry_rows

# The external source's per-image parameter row (float64 holds every int32 and float32 value
# exactly): where to decode and resample, the source image's [H, W, ok], then its geometry row
# (:mod:`.targets`). One row instead of eight small arrays keeps the per-batch hand-over to DALI short.
DECODE_START, DECODE_SHAPE, ROI_START, ROI_END, OUT_SIZE = (slice(i, i + 2) for i in range(0, 10, 2))
FLIP, INFO, GEOMETRY = 10, slice(11, 14), slice(14, 14 + GEOMETRY_WIDTH)
ROW_WIDTH = 14 + GEOMETRY_WIDTH


class BadImageError(RuntimeError):
    """A camera image that cannot be read or decoded."""


class ImageSizeError(BadImageError):
    """The cameras of one sample have different resolutions (upstream's ``np.stack`` refuses them)."""


# What DALI's decoder and upstream's ``mmcv.imread`` (cv2) both read, as PIL names the formats.
DECODER_FORMATS = ("JPEG", "PNG", "BMP", "TIFF", "JPEG2000", "WEBP", "PPM")


def jpeg_size(data: bytes | np.ndarray) -> tuple[int, int]:
    """(height, width) from a JPEG's SOF marker; ``ValueError`` if it is not a complete JPEG."""
    buf = bytes(data)
    if buf[:2] != b"\xff\xd8":
        raise ValueError("not a JPEG (no SOI marker)")
    if b"\xff\xd9" not in buf[-64:]:
        raise ValueError("truncated JPEG (no EOI marker at the end)")
    pos = 2
    while pos + 9 < len(buf):
        if buf[pos] != 0xFF:
            raise ValueError(f"corrupt JPEG marker at byte {pos}")
        marker = buf[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(buf[pos + 5 : pos + 7], "big"), int.from_bytes(
                buf[pos + 7 : pos + 9], "big"
            )
        pos += 2 + length
    raise ValueError("JPEG without a frame header")


def image_size(data: bytes | np.ndarray) -> tuple[int, int]:
    """(height, width) of an encoded image from its header alone: JPEG by its markers (a truncated
    JPEG is refused), PNG by its IHDR chunk (a PNG without IEND is refused), the other formats the
    decoder reads by PIL's header parser. ``ValueError`` for anything else."""
    buf = bytes(data)
    if buf[:2] == b"\xff\xd8":
        return jpeg_size(buf)
    if buf[:8] == b"\x89PNG\r\n\x1a\n":
        if len(buf) < 24 or buf[12:16] != b"IHDR":
            raise ValueError("corrupt PNG (no IHDR chunk)")
        if b"IEND" not in buf[-12:]:
            raise ValueError("truncated PNG (no IEND chunk at the end)")
        return int.from_bytes(buf[20:24], "big"), int.from_bytes(buf[16:20], "big")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(buf)) as im:
            fmt, (width, height) = im.format, im.size
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not an image format the decoder reads ({exc})") from exc
    if fmt not in DECODER_FORMATS:
        raise ValueError(f"{fmt} is not a format the DALI decoder reads ({', '.join(DECODER_FORMATS)})")
    return height, width


def check_same_size(token: str, cams: list[str], sizes: list[tuple[int, int] | None]) -> None:
    """Every readable camera of a sample must have the first one's resolution."""
    known = [(cam, size) for cam, size in zip(cams, sizes, strict=True) if size is not None]
    for cam, size in known[1:]:
        if size != known[0][1]:
            raise ImageSizeError(
                f"sample {token}: camera {cam} is {size[0]}x{size[1]} (HxW) but camera {known[0][0]} is "
                f"{known[0][1][0]}x{known[0][1][1]}; the cameras of a sample must share one resolution "
                "(upstream's pipeline stacks them and fails too)"
            )


@dataclass(frozen=True)
class ImageParams:
    """Where one camera image is decoded and resampled (all in source pixels, HW order)."""

    decode_start: tuple[int, int]
    decode_shape: tuple[int, int]
    roi_start: tuple[float, float]  # relative to the decoded region
    roi_end: tuple[float, float]
    out_size: tuple[float, float]  # resized extent before padding to final_dim
    flip: bool


def image_params(
    draw: AugDraw, height: int, width: int, final_dim: tuple[int, int], roi: bool
) -> ImageParams:
    """PIL's ``resize(resize_dims).crop(crop)`` as a resize of the source window that maps onto the
    crop: output pixel j samples resized pixel ``crop_x + j``, i.e. source ``(crop_x + j + .5) * W/newW``.
    Crop columns/rows beyond the resized image are left for the black padding."""
    new_w, new_h = draw.resize_dims
    crop_w, crop_h, _, _ = draw.crop
    fH, fW = final_dim
    if crop_h < 0 or crop_w < 0:
        raise ValueError(f"crop {draw.crop} starts outside the resized image {draw.resize_dims}")
    rows, cols = min(fH, new_h - crop_h), min(fW, new_w - crop_w)
    sy, sx = height / new_h, width / new_w
    y0, y1 = crop_h * sy, (crop_h + rows) * sy
    top, bottom = 0, height
    if roi:  # keep the filter's support (2 output pixels of the cubic kernel) plus one row
        margin = math.ceil(2 * max(1.0, sy)) + 1
        top, bottom = max(0, math.floor(y0) - margin), min(height, math.ceil(y1) + margin)
    return ImageParams(
        decode_start=(top, 0),
        decode_shape=(bottom - top, width),
        roi_start=(y0 - top, crop_w * sx),
        roi_end=(y1 - top, (crop_w + cols) * sx),
        out_size=(float(rows), float(cols)),
        flip=draw.flip,
    )


def _black_jpeg(height: int, width: int) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height)).save(buf, format="JPEG", quality=75)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


class ImageSource:
    """Batch callback of the external source: for iteration ``i`` (plus the resume offset) read the
    planned frames' encoded images, compute their decode/resample parameters and the frames' training
    targets (geometry and annotations, :mod:`.targets`). With ``py_num_workers > 0`` this runs in
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
            self._black = _black_jpeg(self.cfg.aug.H, self.cfg.aug.W)
        return self._black, (self.cfg.aug.H, self.cfg.aug.W), False

    def __call__(self, batch_info) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """Per image: the encoded bytes, the parameter row (``DECODE_START`` ... ``GEOMETRY``) and the
        annotation record (:func:`.targets.annotation_records`: the sample's, in its first camera)."""
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
                row = np.empty(ROW_WIDTH, dtype=np.float64)
                row[DECODE_START], row[DECODE_SHAPE] = p.decode_start, p.decode_shape
                row[ROI_START] = np.array(p.roi_start, dtype=np.float32)
                row[ROI_END] = np.array(p.roi_end, dtype=np.float32)
                row[OUT_SIZE] = np.array(p.out_size, dtype=np.float32)
                row[FLIP], row[INFO], row[GEOMETRY] = p.flip, (h, w, ok), geometry
                encoded.append(data)
                rows.append(row)
            records += annotation_records(targets, len(cams), plan)
        return encoded, rows, records


def dali_queue_depth(prefetch_queue_depth: int) -> int:
    """DALI's own queue depth for the loader's ``prefetch_queue_depth``: the loader's run-ahead
    (:mod:`.watchdog`) holds one of the batches prepared ahead, DALI the others. The batches ahead
    of the training thread, and their memory, stay what DALI's depth alone gave before the
    run-ahead (at least one: depth 1 and 2 both prepare one batch ahead)."""
    return max(1, prefetch_queue_depth - 1)


def build_pipeline(source: ImageSource, n_cams: int, device_id: int | None, seed: int):
    """The DALI pipeline for ``samples_per_gpu * T * n_cams`` images per iteration (``T`` frames per
    sample: the mode's ``queue_length``).

    Returns a built pipeline with outputs ``(images CHW float32, parameter rows float64, annotation
    records uint8)``, one sample per image (rows and records as :class:`ImageSource` made them).
    Images are on the GPU ``device_id`` when it is given (decoded there with ``device='gpu'``;
    copied there by DALI, ahead of time, with ``device='cpu'``), else in host memory. The dynamic
    executor is forced: every output is a buffer of its own, alive as long as something references
    it, so the loader hands them out without a copy.

    The external-source worker is forked while no CUDA context exists in this process: it shares the
    loader's memory (frames, imported modules) instead of importing torch and DALI a second time
    (150-400 MB less). DALI refuses to fork once CUDA is initialised (a GPU model built first);
    then the worker is spawned.
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
        img = fn.resize(
            img,
            size=field(OUT_SIZE, types.FLOAT),
            roi_start=field(ROI_START, types.FLOAT),
            roi_end=field(ROI_END, types.FLOAT),
            interp_type=types.INTERP_CUBIC,
            antialias=True,
        )
        img = fn.pad(img, axis_names="HW", shape=[fH, fW])
        img = fn.crop_mirror_normalize(
            img,
            mirror=field(FLIP, types.INT32),
            mean=list(cfg.mean),
            std=list(cfg.std),
            output_layout="CHW",
            dtype=types.FLOAT,
        )
        if fH % cfg.size_divisor or fW % cfg.size_divisor:
            img = fn.pad(img, axis_names="HW", align=cfg.size_divisor, shape=[1, 1])
        if on_device and not gpu:
            img = img.gpu()
        return img, rows, records

    pipe = graph()
    with forking_workers():  # forked workers end when this process dies (:mod:`.lifeline`)
        pipe.build()
    return pipe
