"""The sources the watch follows: `upstream/forks.toml`, one `[[source]]` table per repository."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import ForkwatchError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
KEYS = {"name", "url", "branch"}


@dataclass(frozen=True)
class Source:
    """One repository to check the series against: its name in the summary, URL (or local path) and
    the branch to follow."""

    name: str
    url: str
    branch: str


def load_sources(path: Path) -> list[Source]:
    """The `[[source]]` entries of `path`; a clear error naming the file and the entry otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ForkwatchError(f"{path}: no such sources file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ForkwatchError(f"{path}: not valid TOML ({exc})") from None
    entries = data.get("source")
    if not isinstance(entries, list) or not entries:
        raise ForkwatchError(f"{path}: needs at least one [[source]] table (name, url, branch)")
    sources: list[Source] = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: source {i}"
        if not isinstance(entry, dict):
            raise ForkwatchError(f"{where}: not a table")
        if missing := KEYS - entry.keys():
            raise ForkwatchError(f"{where}: lacks {', '.join(sorted(missing))}")
        if extra := entry.keys() - KEYS:
            raise ForkwatchError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        if not all(isinstance(entry[k], str) and entry[k].strip() for k in KEYS):
            raise ForkwatchError(f"{where}: name, url and branch must be non-empty strings")
        if not NAME.match(entry["name"]):
            raise ForkwatchError(
                f"{where}: name {entry['name']!r} is not a plain word (letters, digits, ._-)"
            )
        if entry["branch"].startswith("-"):
            raise ForkwatchError(f"{where}: branch {entry['branch']!r} starts with '-'")
        sources.append(Source(entry["name"], entry["url"], entry["branch"]))
    names = [s.name for s in sources]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise ForkwatchError(f"{path}: source name(s) {', '.join(dupes)} given twice")
    return sources
