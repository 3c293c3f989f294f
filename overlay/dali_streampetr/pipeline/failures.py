"""What is behind a pipeline failure (:func:`diagnose`): a dead or stalled worker, our own image error
raised in the external source (possibly in a worker, reaching the loader as text), or the files
DALI's decoder failed on, found by decoding the planned images with PIL; and ``on_bad_image='skip'``
(:class:`BadImagePolicy`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..batch_schema import PER_CAMERA_KEYS
from ..frames.records import Frame
from .pipeline_errors import (
    BadImageError,
    ImageSizeError,
    LoaderFaultError,
    TooManyBadImagesError,
    UndecodableImageError,
)

# Our errors raised inside a DALI python worker reach the main process as text.
_WORKER_ERROR = re.compile(r"(BadImageError|ImageSizeError): (.+)")


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


def drop_camera_annotations(batch: dict[str, Any], b: int, t: int, cam: int) -> None:
    """A blackened camera has nothing to see: empty its 2D boxes, labels, centres and depths in frame
    ``t`` of sample ``b`` (the 3D boxes stay: they are in the LiDAR frame). Dtypes and trailing shapes
    are kept."""
    for key in PER_CAMERA_KEYS:
        per_cam = batch[key][b][t]
        per_cam[cam] = per_cam[cam][:0]


@dataclass
class BadImagePolicy:
    """``on_bad_image`` and what it has done so far: ``replaced`` (undecodable files served black),
    ``images`` (black cameras in batches), ``files`` (distinct bad files)."""

    on_bad_image: str
    max_files: int
    replaced: set[str] = field(default_factory=set)
    images: int = 0
    files: set[str] = field(default_factory=set)

    def retry(self, error: Exception) -> bool:
        """Whether to rebuild the pipeline at the failed iteration with ``error``'s files served black:
        ``skip``, and the decoder failed on a file not replaced yet (once replaced, a failure of the
        same files stands: there is nothing left to replace)."""
        if self.on_bad_image != "skip" or not isinstance(error, UndecodableImageError):
            return False
        if not set(error.paths) - self.replaced:
            return False
        self.replaced.update(error.paths)
        return True

    def record(self, batch: dict[str, Any], frames: Sequence[Frame], logger: logging.Logger) -> None:
        """Drop the 2D annotations of every blackened camera of ``batch``, count, log and enforce
        ``max_bad_images``. Raises :class:`TooManyBadImagesError` past the threshold."""
        for b, sample in enumerate(batch["dali"]):
            for t, record in enumerate(sample["frames"]):
                frame = frames[record["index"]]
                for name in record["bad_cameras"]:
                    cam = frame.cam_names.index(name)
                    drop_camera_annotations(batch, b, t, cam)
                    path = frame.img_paths[cam]
                    self.images += 1
                    self.files.add(path)
                    logger.warning(
                        "DALI loader: skipped a bad image (black, 2D annotations dropped): sample %s, "
                        "camera %s, %s; bad images so far: %d (%d distinct files, max_bad_images=%d)",
                        frame.token, name, path, self.images, len(self.files), self.max_files,
                    )  # fmt: skip
        if len(self.files) > self.max_files:
            raise TooManyBadImagesError(
                f"{len(self.files)} distinct bad image files exceed data_loading_config.max_bad_images="
                f"{self.max_files} (with on_bad_image='skip'): the data set looks broken, not just a few "
                f"files; the last ones: {sorted(self.files)[-3:]}. Fix or re-extract the images, or raise "
                "max_bad_images if this many black cameras are acceptable"
            )
