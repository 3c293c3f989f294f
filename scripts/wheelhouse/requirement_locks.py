"""Hash-pinned locks: what pip resolves from a folder alone, with every file's sha256."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from gpukit import clean_pip_env, sha256  # sha256: the one file hash, the kit's (it runs alone on a node)
from upstream_env import normalise

SUMS = "SHA256SUMS"


class WheelhouseError(Exception):
    """A user-facing failure naming the file, package or step."""


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    file: str  # the wheel's file name in the wheelhouse


def public_version(version: str) -> str:
    """The version without its local label (``2.13.0+cpu`` -> ``2.13.0``)."""
    return version.split("+", 1)[0]


def run_pip(python: str | Path, args: Sequence[object], what: str, env: dict[str, str] | None = None) -> str:
    """``python -m pip *args``; a failure raises WheelhouseError with pip's last lines."""
    cmd = [str(python), "-m", "pip", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise WheelhouseError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def resolve(python: str | Path, folder: Path, args: Sequence[object], what: str) -> list[Locked]:
    """What ``pip install args`` would install from ``folder`` alone (index disabled, no pip
    config of this machine, nothing installed counted), as (name, version, file)."""
    with tempfile.TemporaryDirectory(prefix="wheelhouse-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        pip_args = ["install", "--dry-run", "--ignore-installed", "--no-index", "--find-links", folder]
        env = clean_pip_env(dict(os.environ))  # no PIP_* settings or pip config: pip sees what it is told
        run_pip(python, [*pip_args, "--quiet", "--report", report, *args], what, env=env)
        items = json.loads(report.read_text())["install"]
    out = []
    for item in items:
        url = item["download_info"]["url"]
        file = unquote(url.rsplit("/", 1)[-1])
        out.append(Locked(item["metadata"]["name"], item["metadata"]["version"], file))
    return sorted(out, key=lambda e: normalise(e.name))


def write_lock(path: Path, entries: Sequence[Locked], folder: Path, header: str) -> Path:
    """``name==version --hash=sha256:...`` per entry (pip's hash-checking mode), sorted by name."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for e in entries:
        lines.append(f"{e.name}=={e.version} --hash=sha256:{sha256(folder / e.file)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def read_lock(path: Path) -> dict[str, tuple[str, str]]:
    """normalised name -> (version, sha256) of a lock file."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            spec, _, digest = line.partition(" --hash=sha256:")
            name, _, version = spec.partition("==")
            out[normalise(name)] = (version, digest.strip())
    return out


def check_pins(entries: Sequence[Locked], pins: dict[str, str], source: str) -> None:
    """Every resolved package that ``source`` pins has its pinned version (local labels aside)."""
    bad = [
        f"{e.name} {e.version} (pinned {pins[normalise(e.name)]})"
        for e in entries
        if normalise(e.name) in pins and public_version(e.version) != public_version(pins[normalise(e.name)])
    ]
    if bad:
        raise WheelhouseError(f"the wheelhouse resolves versions {source} does not pin: {', '.join(bad)}")


def write_sums(folder: Path) -> Path:
    """``SHA256SUMS`` of every file directly in ``folder`` (``sha256sum -c`` reads it)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != SUMS)
    path = folder / SUMS
    path.write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files))
    return path


def verify_sums(folder: Path) -> int:
    """Check every file listed in ``SHA256SUMS``; a missing or changed one raises, naming it."""
    sums = folder / SUMS
    if not sums.is_file():
        raise WheelhouseError(f"{folder} has no {SUMS}: not a wheelhouse made by `nox -s wheelhouse`")
    count = 0
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        path = folder / name
        if not path.is_file():
            raise WheelhouseError(f"{path}: listed in {SUMS} but missing; copy the wheelhouse again")
        if sha256(path) != digest:
            raise WheelhouseError(f"{path}: sha256 differs from {SUMS}; refusing it, copy it again")
        count += 1
    return count
