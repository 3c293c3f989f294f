"""The errors of the DALI pipeline: the loader's own faults (:class:`LoaderFaultError`), a bad camera
image (:class:`BadImageError`) and a failed assembly (:class:`AssemblyError`), each with a message that
names the sample, camera and path or the stage, the setting and what to try. After any of them the
next ``next()`` rebuilds.
"""

from __future__ import annotations

from collections.abc import Sequence


class LoaderFaultError(RuntimeError):
    """The DALI pipeline can no longer deliver this batch (dead worker, stall)."""


class WorkerDiedError(LoaderFaultError):
    """A DALI python worker process exited while the loader still needed it."""


class PipelineStalledError(LoaderFaultError):
    """No batch within ``data_loading_config.batch_timeout_s``."""


class PipelineStartError(LoaderFaultError):
    """No pipeline (its workers did not start) within ``data_loading_config.start_timeout_s``."""


class BadImageError(RuntimeError):
    """A camera image that cannot be read or decoded."""


class ImageSizeError(BadImageError):
    """The cameras of one sample have different resolutions (upstream's ``np.stack`` refuses them)."""


class UndecodableImageError(BadImageError):
    """The decoder failed on these files (``paths``), which PIL cannot decode either."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = tuple(paths)


class TooManyBadImagesError(BadImageError):
    """``on_bad_image='skip'`` met more distinct bad files than ``max_bad_images``."""


class AssemblyError(RuntimeError):
    """Turning the pipeline's outputs into a batch failed (``error`` is what was raised)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
