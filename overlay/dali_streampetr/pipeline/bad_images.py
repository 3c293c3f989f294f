"""What ``on_bad_image`` does: with ``skip`` an undecodable file is served black on a rebuild at the
failed iteration, and a blackened camera loses its 2D annotations, is counted, logged, and past
``max_bad_images`` distinct files stops the run; with ``raise`` the error stands."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..frames.records import Frame
from .failure_cause import UndecodableImageError
from .image_files import BadImageError

ANNOTATIONS_2D = ("gt_bboxes", "gt_labels", "centers2d", "depths")


class TooManyBadImagesError(BadImageError):
    """``on_bad_image='skip'`` met more distinct bad files than ``max_bad_images``."""


def drop_camera_annotations(batch: dict[str, Any], b: int, t: int, cam: int) -> None:
    """A blackened camera has nothing to see: empty its 2D boxes, labels, centres and depths in frame
    ``t`` of sample ``b`` (the 3D boxes stay: they are in the LiDAR frame). Dtypes and trailing shapes
    are kept."""
    for key in ANNOTATIONS_2D:
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
