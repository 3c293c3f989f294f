"""Sessions of streampetr-dali. `nox` runs lint + tests; see README.md for the rest.

Environments are built once and shared by the sessions that need them (see `ensure_env`):
`.nox/_env/hermetic` (DALI, CPU torch, numpy: the loader, tooling and synthetic data) and the
OpenMMLab "upstream" env. Sessions themselves run with `venv_backend="none"`.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
ENV_ROOT = ROOT / ".nox" / "_env"
PYTHONPATH = os.pathsep.join(str(ROOT / p) for p in ("scripts", "overlay"))

nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "none"

HERMETIC_REQUIREMENTS = ("requirements/hermetic.txt",)
HERMETIC_CONSTRAINTS = "constraints/hermetic.txt"


def ensure_env(session: nox.Session, name: str, requirements: tuple[str, ...], constraints: str) -> str:
    """Create `.nox/_env/<name>` once and (re)install only when its requirement files change.

    Returns the path of the env's python.
    """
    env = ENV_ROOT / name
    python = env / "bin" / "python"
    files = [ROOT / f for f in (*requirements, constraints) if (ROOT / f).exists()]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    stamp = env / ".requirements.sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return str(python)
    if not python.exists():
        session.run(sys.executable, "-m", "venv", str(env), external=True)
    args = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if (ROOT / constraints).exists():
        args += ["-c", constraints]
    for req in requirements:
        args += ["-r", req]
    session.run(*args, external=True)
    stamp.write_text(digest)
    return str(python)


def hermetic_python(session: nox.Session) -> str:
    return ensure_env(session, "hermetic", HERMETIC_REQUIREMENTS, HERMETIC_CONSTRAINTS)


def run_tool(session: nox.Session, python: str, module: str, *args: str) -> None:
    """Run `python -m module args` with the project's source roots on the path."""
    session.run(python, "-m", module, *args, external=True, env={"PYTHONPATH": PYTHONPATH})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on everything we own."""
    python = hermetic_python(session)
    session.run(python, "-m", "ruff", "check", ".", external=True)
    session.run(python, "-m", "ruff", "format", "--check", ".", external=True)
    run_tool(session, python, "overlaytool", "lint")


@nox.session
def tests(session: nox.Session) -> None:
    """Hermetic tests, plus the upstream tier when the local upstream cache holds the pins."""
    python = hermetic_python(session)
    session.run(python, "-m", "pytest", *session.posargs, external=True)


@nox.session
def fetch(session: nox.Session) -> None:
    """Fill the local upstream cache: `nox -s fetch [-- --from <path-or-url>]`."""
    run_tool(session, sys.executable, "overlaytool", "fetch", *session.posargs)


@nox.session
def apply(session: nox.Session) -> None:
    """Check out the pin, verify and apply patches/series, add overlay/ (`-- --force` to discard edits)."""
    run_tool(session, sys.executable, "overlaytool", "apply", *session.posargs)


@nox.session
def refresh(session: nox.Session) -> None:
    """Export the changes in upstream/StreamPETR (work tree or commits) back to patches/, byte-stably."""
    run_tool(session, sys.executable, "overlaytool", "refresh", *session.posargs)


@nox.session
def edit(session: nox.Session) -> None:
    """Turn the applied series into commits on top of the pin, to edit with git before `refresh`."""
    run_tool(session, sys.executable, "overlaytool", "edit", *session.posargs)
