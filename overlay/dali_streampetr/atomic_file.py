"""The loader package's one way to replace a file (the frame store's files, the training's
checkpoints and their ``latest.pth``): whole, and on disk when the call returns. The package runs
without the project's scripts/ on its path, so it has its own writer rather than ``overlaytool``'s."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def replace_file(
    path: Path,
    write: Callable[[BinaryIO], None] | None = None,
    *,
    link: str | None = None,
    tmp_name: str | None = None,
    checkpoint: Callable[[str], None] = lambda step: None,
) -> None:
    """Make ``path`` hold what ``write(f)`` writes into ``f``, the temporary file open for writing
    (``f.name`` is its path: a writer that takes a file name, like mmcv's ``save_checkpoint``, may
    write there instead), or, with ``link``, make ``path`` a symbolic link to ``link``.

    ``tmp_name``: the temporary file's name (default ``.<name>.tmp-<pid>``); ``checkpoint("written")``
    is called before the rename, ``("published")`` after it (fault-injection points). Any failure
    removes the temporary file."""
    tmp = path.with_name(tmp_name or f".{path.name}.tmp-{os.getpid()}")
    if link is not None:
        os.symlink(link, tmp)  # FileExistsError where something is there: not ours, left as it is
        f = None
    else:
        assert write is not None, "replace_file: give `write` or `link`"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        f = open(str(tmp), "wb", opener=lambda name, _: os.open(name, flags, 0o644))  # noqa: SIM115
    try:
        if f is not None:
            with f:
                write(f)
                f.flush()
                os.fsync(f.fileno())  # the file's data, whichever descriptor wrote it
        checkpoint("written")
        os.replace(tmp, path)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        checkpoint("published")
    finally:
        tmp.unlink(missing_ok=True)  # ours (O_EXCL): gone after the rename, else a partial file
