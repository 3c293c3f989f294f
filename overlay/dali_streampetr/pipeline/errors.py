"""The loader's own faults: what stops the DALI pipeline from delivering a batch (each message
names the stage, the setting and what to try). After any of them the next ``next()`` rebuilds."""

from __future__ import annotations


class LoaderFaultError(RuntimeError):
    """The DALI pipeline can no longer deliver this batch (dead worker, stall)."""


class WorkerDiedError(LoaderFaultError):
    """A DALI python worker process exited while the loader still needed it."""


class PipelineStalledError(LoaderFaultError):
    """No batch within ``data_loading_config.batch_timeout_s``."""


class PipelineStartError(LoaderFaultError):
    """No pipeline (its workers did not start) within ``data_loading_config.start_timeout_s``."""
