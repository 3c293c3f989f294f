"""Where a fetch may come from: a local mirror or clone (a path or file:// URL), or a remote URL."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from .errors import OverlayError
from .gitcmd import git
from .pins import Pin


def local_source(source: str) -> Path | None:
    """The repository directory `source` names, None for a URL; a missing path is an error."""
    if "://" in source or (":" in source and not source.startswith(("/", ".", "~"))):
        return None
    path = Path(source).expanduser()
    if not path.exists():
        raise OverlayError(f"--from {source}: no such path.")
    if git("rev-parse", "--git-dir", cwd=path, check=False).returncode != 0:
        raise OverlayError(f"--from {source}: {path} is not a git repository (a mirror or a clone).")
    return path.resolve()


def is_pinned_url(pin: Pin, origin: str) -> bool:
    """True when `origin` is the pin's URL (or, for a file:// URL, the directory it names)."""
    if origin == pin.url:
        return True
    parsed = urllib.parse.urlparse(pin.url)
    if parsed.scheme != "file" or "://" in origin:
        return False
    return Path(urllib.parse.unquote(parsed.path)).resolve() == Path(origin).expanduser().resolve()


def source_dir(origin: str) -> Path | None:
    """The repository directory a local path or file:// URL names (None: a remote, or not a repository)."""
    parsed = urllib.parse.urlparse(origin)
    if "://" in origin and parsed.scheme != "file":
        return None
    path = Path(urllib.parse.unquote(parsed.path) if "://" in origin else origin).expanduser()
    if not path.is_dir() or git("rev-parse", "--git-dir", cwd=path, check=False).returncode != 0:
        return None
    return path
