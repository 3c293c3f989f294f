"""Read and validate the upstream pins (`upstream/*.toml`)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import OverlayError

COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
URL_RE = re.compile(r"^(https?|ssh|git|file)://[^\s]+$|^[\w.-]+@[\w.-]+:[^\s]+$")
REQUIRED = ("name", "url", "commit", "checkout")
OPTIONAL = ("tag", "date", "source")


@dataclass(frozen=True)
class Pin:
    """One pinned upstream repository."""

    file: Path
    name: str
    url: str
    commit: str
    checkout: str
    tag: str | None = None
    date: str | None = None
    source: str | None = None  # where `commit` can be fetched when `url` does not serve it (a fork)

    @property
    def slug(self) -> str:
        """`owner+repo` from the URL: the cache mirror's name."""
        parts = self.url.rstrip("/").removesuffix(".git").replace(":", "/").split("/")
        return f"{parts[-2]}+{parts[-1]}"


def read_toml(path: Path, missing: str) -> dict:
    """The TOML table of `path`; `OverlayError` naming the file when it is `missing` or not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise OverlayError(f"{path}: {missing}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise OverlayError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:  # a folder, no permission, ...
        raise OverlayError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


def load_pin(path: Path) -> Pin:
    """Parse one pin file; every problem names the file and the key."""
    data = read_toml(path, "pin file not found")
    for key in REQUIRED:
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise OverlayError(f"{path}: key '{key}' is missing or not a non-empty string")
    if not COMMIT_RE.match(data["commit"]):
        raise OverlayError(
            f"{path}: key 'commit' must be a full 40-hex commit id (lower case), got {data['commit']!r}"
        )
    if not URL_RE.match(data["url"]):
        raise OverlayError(f"{path}: key 'url' is not a git URL: {data['url']!r}")
    if "source" in data and (not isinstance(data["source"], str) or not URL_RE.match(data["source"])):
        raise OverlayError(f"{path}: key 'source' is not a git URL: {data['source']!r}")
    for key in ("tag", "date"):
        if key in data and not isinstance(data[key], str):
            raise OverlayError(f"{path}: key '{key}' must be a string, got {data[key]!r}")
    checkout = data["checkout"]
    if "\0" in checkout or Path(checkout).is_absolute() or ".." in Path(checkout).parts:
        raise OverlayError(f"{path}: key 'checkout' must be a path inside the repository, got {checkout!r}")
    return Pin(file=path, **{key: data.get(key) for key in (*REQUIRED, *OPTIONAL)})


SOURCE_COMMENT = "# where the commit above lives (it is not on url)"


def pin_text(pin: Pin, commit: str, date: str | None, source: str | None) -> str:
    """The pin file with a new commit (and date, and `source`: None removes it), comments and layout kept."""
    text = pin.file.read_text(encoding="utf-8")
    text = re.sub(r'(?m)^commit\s*=\s*"[0-9a-fA-F]*"', f'commit = "{commit}"', text)
    if date is not None:
        text = re.sub(r'(?m)^date\s*=\s*"[^"]*"', f'date = "{date}"', text)
    text = re.sub(rf"(?m)^{re.escape(SOURCE_COMMENT)}\n", "", text)
    text = re.sub(r'(?m)^source\s*=\s*"[^"]*"\n', "", text)
    if source is not None:
        line = f'{SOURCE_COMMENT}\nsource = "{source}"\n'
        text = re.sub(r"(?m)^(commit\s*=.*\n)", lambda m: m.group(1) + line, text, count=1)
    return text
