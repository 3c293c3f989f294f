"""Tiny real wheels for the tests that install: a zip with its dist-info and RECORD, as `pip wheel`
writes one, that pip and uv install into a real venv like any other."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

WHEEL = b"Wheel-Version: 1.0\nGenerator: tiny_wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """`folder/<name>-<version>-py3-none-any.whl` holding `files`, with METADATA, WHEEL and RECORD."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": WHEEL,
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return wheel
