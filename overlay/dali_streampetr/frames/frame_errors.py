"""The errors of an info file's frames: an info pickle that is not StreamPETR's shape or that would
run code (:mod:`.info_schema`, :mod:`.unpickle`), and a frame store that is damaged, could have been
written by another user, changed while it was built, or cannot be written (:mod:`.store_file`,
:mod:`.store_build`, :mod:`.store`)."""

from __future__ import annotations

import pickle


class InfoSchemaError(ValueError):
    """The info pickle does not have the shape StreamPETR's training dataset reads."""


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle references a global outside :data:`.unpickle.SAFE_GLOBALS`."""


class StoreDamaged(ValueError):
    """A store file that cannot be trusted (truncated, corrupt, or written for another key)."""


class StoreUntrusted(RuntimeError):
    """A store folder or file another user could have written (or a link where a file belongs)."""


class InfoFileChanged(RuntimeError):
    """The info file's content is not the one its store key was made of (it changed meanwhile)."""


class StoreUnwritable(OSError):
    """The store folder cannot be written (the loader then keeps the frames in its own process)."""
