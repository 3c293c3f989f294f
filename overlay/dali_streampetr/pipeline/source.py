"""The external source's batch callback: per iteration the planned frames' encoded images, their
decode/resample parameter rows and the frames' training targets.

The encoded camera images it reads: their size from the header alone, the errors of a bad one, and
the black image served in its place (``on_bad_image='skip'``).
"""

from __future__ import annotations

import io
import os

import numpy as np

from ..batch.transforms import image_params
from ..batch.wire import annotation_records, geometry_rows, param_row
from ..sampling.plan import BatchPlanner
from ..settings import LoaderConfig
from .pipeline_errors import BadImageError, ImageSizeError
from .watchdog import watch_owner


class ImageSource:
    """Batch callback of the external source (in DALI's worker process when ``py_num_workers > 0``):
    iteration ``i`` (plus the resume offset)'s encoded images, parameter rows and targets
    (:mod:`..batch.wire`). It plans with a copy of ``planner`` of its own, made where it runs.
    ``replaced``: paths known to be undecodable, served black (``on_bad_image='skip'``)."""

    def __init__(
        self,
        cfg: LoaderConfig,
        planner: BatchPlanner,
        frames: list,
        start_iteration: int,
        replaced: frozenset[str] = frozenset(),
    ):
        self.cfg, self.loader_planner, self.start = cfg, planner, start_iteration
        self.replaced = replaced
        self.frames = frames  # read per sample: no per-frame object is held (a forked worker shares them)
        self._planner: BatchPlanner | None = None
        self._black: np.ndarray | None = None
        self.owner_pid = os.getpid()  # the loader's process: a spawned worker ends when it dies

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_planner": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._planner = self.loader_planner  # unpickled: this process's own copy already
        watch_owner(self.owner_pid)  # in a spawned worker (no-op in the loader's process)

    @property
    def planner(self) -> BatchPlanner:
        if self._planner is None:
            self._planner = self.loader_planner.fresh()
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
            targets = self.cfg.mode.targets(frame, sample.draw, self.cfg)
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


def black_jpeg(height: int, width: int) -> np.ndarray:
    """A black JPEG of ``height`` x ``width``: what a skipped camera is decoded from."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height)).save(buf, format="JPEG", quality=75)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)
