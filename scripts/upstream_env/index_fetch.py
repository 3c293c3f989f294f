"""Download one pinned source archive from the package index without building it.

`pip download` of an sdist prepares its metadata: it runs the archive's `setup.py` with the Python
it runs under. mmcv-full 1.6.0's `get_version()` cannot run on Python 3.13 (PEP 667) before this
project edits it (`setup_py.py`), so the archive is fetched as a plain file instead: the index's
project page (PEP 691 JSON, or PEP 503 HTML), the file by name, its sha256 checked against the pin.
The indexes are pip's own: `$PIP_INDEX_URL` / `$PIP_EXTRA_INDEX_URL`, else pip's configuration,
else PyPI.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from interpreter import pip_settings
from overlaytool import replace_file

from .errors import EnvBuildError

PYPI = "https://pypi.org/simple/"
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
HREF = re.compile(r"""href\s*=\s*["']([^"']+)["']""", re.I)


def indexes(python: Path) -> list[str]:
    """The simple-index URLs pip would read, in its order: the index, then the extra ones."""
    settings = pip_settings(str(python))
    main, extra = settings.get("index-url", "").split(), settings.get("extra-index-url", "").split()
    return [u if u.endswith("/") else u + "/" for u in (main or [PYPI]) + extra if not u.startswith("file:")]


def _get(url: str, accept: str | None = None) -> tuple[bytes, str, str]:
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=60, context=context) as reply:  # noqa: S310 (https index)
        return reply.read(), reply.geturl(), reply.headers.get("Content-Type", "")


def file_url(index: str, project: str, filename: str) -> str | None:
    """The URL of `filename` on `index`'s page of `project`, or None where the page lacks it."""
    body, where, kind = _get(urljoin(index, f"{project}/"), ACCEPT)
    if "json" in kind:
        links = [(f["filename"], f["url"]) for f in json.loads(body).get("files", [])]
    else:
        links = [(Path(urlsplit(h).path).name, h) for h in HREF.findall(body.decode("utf-8", "replace"))]
    return next((urljoin(where, url) for name, url in links if name == filename), None)


def fetch_sdist(python: Path, project: str, filename: str, sha256: str, dest: Path) -> Path:
    """`dest/filename`, downloaded from the first index that has it and checked against `sha256`
    (written whole or not at all). A named error lists each index tried and what it said."""
    tried = []
    for index in indexes(python):
        try:
            url = file_url(index, project, filename)
            if url is None:
                tried.append(f"{index}: no {filename}")
                continue
            data = _get(url)[0]
        except (OSError, ValueError, urllib.error.URLError) as exc:
            tried.append(f"{index}: {exc}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            tried.append(f"{url}: sha256 {digest}, pinned {sha256}")
            continue
        dest.mkdir(parents=True, exist_ok=True)
        replace_file(dest / filename, data)
        return dest / filename
    raise EnvBuildError(
        f"could not download {filename}: {'; '.join(tried)}. Offline, seed it from a wheelhouse "
        f"(STREAMPETR_WHEELHOUSE, docs/offline.md) or put the file at {dest / filename}."
    )
