"""The sdist download without pip: a file found on a simple index's project page (PEP 503 HTML or
PEP 691 JSON, relative links resolved), checked against the pinned sha256, written whole; a wrong
file or a page without it is a named error and leaves nothing behind. A local index on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from upstream_env import EnvBuildError
from upstream_env.index_fetch import fetch_sdist

NAME = "mmcv-full-1.6.0.tar.gz"
DATA = b"the sdist's bytes"


class Index(BaseHTTPRequestHandler):
    """`/html/mmcv-full/` (PEP 503), `/json/mmcv-full/` (PEP 691), `/files/<name>`; `/empty/...` lacks it."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        link = f"../../files/{NAME}#sha256={hashlib.sha256(DATA).hexdigest()}"
        pages = {
            "/html/mmcv-full/": ("text/html", f'<html><body><a href="{link}">{NAME}</a></body></html>'),
            "/json/mmcv-full/": (
                "application/vnd.pypi.simple.v1+json",
                json.dumps({"files": [{"filename": NAME, "url": link}]}),
            ),
            "/empty/mmcv-full/": ("text/html", "<html><body></body></html>"),
        }
        kind, body = pages.get(self.path, ("application/octet-stream", None))
        data = body.encode() if body is not None else DATA if self.path == f"/files/{NAME}" else None
        self.send_response(200 if data is not None else 404)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(data or b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # only the index named here
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("page", ["html", "json"])
def test_the_file_on_the_index_page_is_fetched_and_checked(
    index: str, page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", f"{index}/{page}/")
    got = fetch_sdist(Path(sys.executable), "mmcv-full", NAME, hashlib.sha256(DATA).hexdigest(), tmp_path)
    assert got == tmp_path / NAME and got.read_bytes() == DATA


def test_a_wrong_file_or_none_is_a_named_error_and_leaves_nothing(
    index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", f"{index}/html/")
    pinned = hashlib.sha256(b"another sdist").hexdigest()
    with pytest.raises(
        EnvBuildError, match=rf"{NAME}: .*sha256 {hashlib.sha256(DATA).hexdigest()}, pinned {pinned}"
    ):
        fetch_sdist(Path(sys.executable), "mmcv-full", NAME, pinned, tmp_path)
    monkeypatch.setenv("PIP_INDEX_URL", f"{index}/empty/")
    with pytest.raises(EnvBuildError, match=rf"{index}/empty/: no {NAME}"):
        fetch_sdist(Path(sys.executable), "mmcv-full", NAME, hashlib.sha256(DATA).hexdigest(), tmp_path)
    assert list(tmp_path.iterdir()) == []
