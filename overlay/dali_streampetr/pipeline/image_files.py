"""Encoded camera images: their size from the header alone, the errors of a bad one, and the black
image served in its place (``on_bad_image='skip'``)."""

from __future__ import annotations

import io

import numpy as np


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


def black_jpeg(height: int, width: int) -> np.ndarray:
    """A black JPEG of ``height`` x ``width``: what a skipped camera is decoded from."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height)).save(buf, format="JPEG", quality=75)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)
