"""Bad camera images: finding the file behind a decoder failure, and what ``on_bad_image='skip'``
does to a batch (2D annotations of a blackened camera dropped, a running count, a threshold)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .infos import Frame
from .pipeline import BadImageError

ANNOTATIONS_2D = ("gt_bboxes", "gt_labels", "centers2d", "depths")
# Our errors raised inside a DALI python worker reach the main process as text.
_WORKER_ERROR = re.compile(r"(BadImageError|ImageSizeError): (.+)")


class UndecodableImageError(BadImageError):
    """The decoder failed on these files (``paths``), which PIL cannot decode either."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = tuple(paths)


class TooManyBadImagesError(BadImageError):
    """``on_bad_image='skip'`` met more distinct bad files than ``max_bad_images``."""


def worker_error(exc: BaseException) -> BadImageError | None:
    """Our own image error, raised in the image source (possibly in a worker process), or None."""
    if isinstance(exc, BadImageError):
        return exc
    from .pipeline import ImageSizeError

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


def drop_camera_annotations(batch: dict[str, Any], b: int, t: int, cam: int) -> None:
    """A blackened camera has nothing to see: empty its 2D boxes, labels, centres and depths in frame
    ``t`` of sample ``b`` (the 3D boxes stay: they are in the LiDAR frame). Dtypes and trailing shapes
    are kept."""
    for key in ANNOTATIONS_2D:
        per_cam = batch[key][b][t]
        per_cam[cam] = per_cam[cam][:0]


@dataclass
class BadImageLedger:
    """What ``skip`` has replaced so far: ``images`` (occurrences in batches), ``files`` (distinct)."""

    max_files: int
    images: int = 0
    files: set[str] = field(default_factory=set)

    def record(self, batch: dict[str, Any], frames: Sequence[Frame], logger: logging.Logger) -> None:
        """Drop the 2D annotations of every blackened camera of ``batch``, count, log and enforce
        ``max_bad_images``. Raises :class:`TooManyBadImagesError` past the threshold."""
        for b, sample in enumerate(batch["dali"]):
            for t, record in enumerate(sample.get("frames", [sample])):
                self._record_frame(batch, b, t, record, frames, logger)
        if len(self.files) > self.max_files:
            raise TooManyBadImagesError(
                f"{len(self.files)} distinct bad image files exceed data_loading_config.max_bad_images="
                f"{self.max_files} (with on_bad_image='skip'): the data set looks broken, not just a few "
                f"files; the last ones: {sorted(self.files)[-3:]}. Fix or re-extract the images, or raise "
                "max_bad_images if this many black cameras are acceptable"
            )

    def _record_frame(
        self,
        batch: dict[str, Any],
        b: int,
        t: int,
        record: dict,
        frames: Sequence[Frame],
        logger: logging.Logger,
    ) -> None:
        frame = frames[record["index"]]
        for name in record["bad_cameras"]:
            cam = frame.cam_names.index(name)
            drop_camera_annotations(batch, b, t, cam)
            path = frame.img_paths[cam]
            self.images += 1
            self.files.add(path)
            logger.warning(
                "DALI loader: skipped a bad image (black, 2D annotations dropped): sample %s, camera %s, "
                "%s; bad images so far: %d (%d distinct files, max_bad_images=%d)",
                frame.token, name, path, self.images, len(self.files), self.max_files,
            )  # fmt: skip
