"""Where the images of an info file's ``data_path`` entries are: one rule, picked once per info file."""

from __future__ import annotations

import os
from pathlib import Path


class PathResolver:
    """``resolver(data_path)`` -> absolute image path, by the rule :func:`path_resolver` picked
    (picklable, so a spawned worker resolves like the loader)."""

    def __init__(self, data_root: Path | None, skip: int | None) -> None:
        self.data_root, self.skip = data_root, skip  # data_root None: the path as is (upstream's rule)

    def __call__(self, path: str) -> str:
        if self.data_root is None:
            return os.path.abspath(path)
        if self.skip is None:
            return str((self.data_root / path).absolute())
        return str(self.data_root.joinpath(*Path(path).parts[self.skip :]).absolute())


def path_resolver(data_root: Path, probe: str) -> PathResolver:
    """Return ``data_path -> absolute path``.

    Upstream opens ``data_path`` relative to the working directory, where the converter wrote
    ``<data_root>/samples/...``. Here the first of these that exists for ``probe`` is used for all
    paths: the path as is (absolute or cwd-relative, upstream's rule), ``data_root/<path>``, then
    ``data_root/<path minus 1, 2, ... leading components>``.
    """
    parts = Path(probe).parts
    if Path(probe).is_absolute() or Path(probe).exists():
        return PathResolver(None, None)
    for skip in range(len(parts)):
        if (data_root.joinpath(*parts[skip:])).exists():
            return PathResolver(data_root, skip)
    return PathResolver(data_root, None)
