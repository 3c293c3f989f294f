"""What is behind a pipeline failure: a dead or stalled worker (the watchdog's error), our own image
error raised in the external source (possibly in a worker process, where it reaches the loader as
text), or the file(s) DALI's decoder failed on, found by decoding the planned images with PIL (the
decoder's own error names none)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..frames.records import Frame
from .errors import LoaderFaultError
from .image_files import BadImageError, ImageSizeError

# Our errors raised inside a DALI python worker reach the main process as text.
_WORKER_ERROR = re.compile(r"(BadImageError|ImageSizeError): (.+)")


class UndecodableImageError(BadImageError):
    """The decoder failed on these files (``paths``), which PIL cannot decode either."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = tuple(paths)


def worker_error(exc: BaseException) -> BadImageError | None:
    """Our own image error, raised in the image source (possibly in a worker process), or None."""
    if isinstance(exc, BadImageError):
        return exc
    found = _WORKER_ERROR.findall(str(exc))
    if not found:
        return None
    name, message = found[-1]
    return (ImageSizeError if name == "ImageSizeError" else BadImageError)(message.strip())


def undecodable(frames: Sequence[Frame], indices: Iterable[int]) -> list[tuple[Frame, str, str, str]]:
    """(frame, camera, path, reason) of every image of these frames that PIL cannot decode."""
    from PIL import Image

    found, seen = [], set()
    for index in indices:
        frame = frames[index]
        for cam, path in zip(frame.cam_names, frame.img_paths, strict=True):
            if path in seen:
                continue
            seen.add(path)
            try:
                with Image.open(path) as im:
                    im.load()
            except Exception as err:  # noqa: BLE001 - any failure names the file
                found.append((frame, cam, path, f"{type(err).__name__}: {err}"))
    return found


def diagnose(exc: Exception, frames: Sequence[Frame], planned: Iterable[int], iteration: int) -> Exception:
    """The error to raise for ``exc``, a failure of the pipeline stopped at ``iteration``: the
    watchdog's or our own error as is, else an :class:`UndecodableImageError` naming the files among
    the ``planned`` frames (this and the prefetched iterations) that PIL cannot decode, else ``exc``."""
    if isinstance(exc, LoaderFaultError):
        return exc
    own = worker_error(exc)
    if own is not None:
        return own
    found = undecodable(frames, dict.fromkeys(planned))
    if not found:
        return exc
    frame, cam, path, reason = found[0]
    more = f" (and {len(found) - 1} more: {[f[2] for f in found[1:]]})" if len(found) > 1 else ""
    return UndecodableImageError(
        f"sample {frame.token}, camera {cam}: cannot decode {path}: {reason}{more}; the pipeline "
        f"stopped at iteration {iteration}",
        [f[2] for f in found],
    )
