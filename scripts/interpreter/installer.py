"""The one spelling of the installer for the envs this project builds: uv where it is installed
beside nox, else pip (the GPU kit's node). uv reads neither pip's configuration nor its ``PIP_*``
variables, so pip's package sources are passed to it explicitly (docs/upstream-env.md#installer).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

# pip setting -> uv option; the values of the listed settings are space-separated lists
SOURCES = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
TRUE = {"1", "true", "yes", "on"}


def pip_settings(python: str = sys.executable) -> dict[str, str]:
    """pip's effective settings as ``pip config list`` of ``python`` shows them (its files, then the
    ``PIP_*`` variables, which win), keyed by the bare name (``index-url``)."""
    listed = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    found = re.findall(r"^([\w:-]*)\.([\w-]+)\s*=\s*'?(.*?)'?$", listed, re.M)
    files = {key: value for where, key, value in found if where != ":env:"}
    return files | {key: value for where, key, value in found if where == ":env:"}


def _exists(location: str) -> bool:
    """A URL or path pip would read: a local one only where it exists (pip warns and skips it)."""
    parts = urlsplit(location)
    if parts.scheme in ("http", "https"):
        return True
    return Path(url2pathname(parts.path) if parts.scheme == "file" else location).exists()


def uv_options(settings: dict[str, str]) -> list[str]:
    """The uv options that give uv pip's package sources ``settings`` (:func:`pip_settings`)."""
    options = ["--no-index"] if settings.get("no-index", "").lower() in TRUE else []
    for key, option in SOURCES.items():
        options += [a for value in settings.get(key, "").split() if _exists(value) for a in (option, value)]
    return options


def uv_binary() -> str | None:
    """The uv installed beside the running Python (the ``uv`` package's binary), else None: never one
    found on PATH, which on a node running the GPU kit is the login shell's, not the kit's installer."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return None


def install_command(python: Path | str, *args: object) -> list[str]:
    """The command that installs ``args`` (requirements, constraints, options) into ``python``'s venv:
    ``uv pip install`` with pip's package sources, else ``pip install``."""
    uv = uv_binary()
    if uv is None:
        return [str(python), "-m", "pip", "install", "--disable-pip-version-check", *map(str, args)]
    # as pip does: every index's versions are candidates (uv's default takes only the first index that
    # has the project), and files are copied (a hard link into uv's cache would let an edit of an
    # installed file change the cache and every env linked to it): tests/interpreter/test_installer.py
    uv_pip = [uv, "pip", "install", "--python", str(python), "--index-strategy", "unsafe-best-match"]
    uv_pip += ["--link-mode", "copy"]
    return [*_own_temp(uv), *uv_pip, *uv_options(pip_settings()), *map(str, args)]


def _own_temp(uv: str) -> list[str]:
    """``env TMPDIR=<uv's cache>/tmp``: uv takes a lock file in the temp folder for each setuptools
    build and never removes it (``uv-setuptools-<digest>.lock``, astral-sh/uv#11358); in its own cache
    it is uv's, not litter in the system's temp folder."""
    cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    temp = Path(cache) / "tmp"
    temp.mkdir(parents=True, exist_ok=True)
    return ["env", f"TMPDIR={temp}"]
