"""Choose the interpreter both envs are built with (stdlib only: the noxfile imports it first)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# The CPython minors every pin of both envs has wheels for (docs/upstream-env.md#pythons). 3.14:
# nuscenes-devkit 1.2.0 needs shapely 2.0, which has no 3.14 wheels; 3.10 and older: numba 0.68
# and numpy 2.4 have none.
SUPPORTED: tuple[tuple[int, int], ...] = ((3, 11), (3, 12), (3, 13))
TOOLING_NEEDS = (3, 11)  # the Python nox itself must run on: the tooling imports tomllib
ASKED_VARIABLE = "STREAMPETR_PYTHON"  # an interpreter the user chose for the envs
DISTRIBUTION = Path("/usr/bin/python3")  # the distribution's own python3 (Debian, Ubuntu, Fedora)
_PROBE = "import sys; print(*sys.version_info[:3]); print(sys.implementation.name)"


class UnsupportedPython(RuntimeError):
    """The running interpreter is not supported and no supported one was found on this host."""


@dataclass(frozen=True)
class BasePython:
    """The interpreter the envs are built with, its version, and a line to show when it is not the
    one nox runs on."""

    path: str
    version: tuple[int, int, int]
    note: str | None = None

    @property
    def minor(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def label(self) -> str:
        """Its minor, or ``system`` for the distribution's own python3 (`nox -s pythons` names them so)."""
        return "system" if self.path == str(DISTRIBUTION) else self.minor


def venv_minor(env: Path) -> str | None:
    """The Python minor a venv was made with (its `pyvenv.cfg`), or None where there is none."""
    try:
        lines = (env / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return None


def _dotted(version: Sequence[int]) -> str:
    return ".".join(map(str, version))


def _label(minors: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{a}.{b}" for a, b in minors)


def python_version(python: Path) -> tuple[int, int, int] | None:
    """`python`'s CPython version, or None (not runnable, not CPython, no answer in 10 s)."""
    try:
        out = subprocess.run(
            [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=10, check=True
        ).stdout.split("\n")
        major, minor, micro = (int(x) for x in out[0].split())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return (major, minor, micro) if out[1].strip() == "cpython" else None


def _folder_version(python: Path) -> tuple[int, ...]:
    """pyenv's `versions/3.12.1/bin/python3` -> (3, 12, 1); other names sort first."""
    parts = python.parents[1].name.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else ()


def candidates(path: str | None = None, pyenv_root: Path | None = None) -> list[Path]:
    """Interpreters this host offers, newest supported minor first: `python3.X` on PATH, then
    pyenv's versions, then what uv finds (`uv python find`)."""
    found: list[Path] = []
    root = pyenv_root or Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for minor in sorted(SUPPORTED, reverse=True):
        exe = shutil.which(f"python{minor[0]}.{minor[1]}", path=path)
        if exe and not Path(exe).is_relative_to(root / "shims"):  # pyenv's versions below are those
            found.append(Path(exe))
    pyenv = sorted((root / "versions").glob("*/bin/python3"), key=_folder_version, reverse=True)
    # a folder named for an unsupported minor is not started; one not named for a version is
    found += [p for p in pyenv if _folder_version(p)[:2] in (*SUPPORTED, ())]
    uv = shutil.which("uv", path=path)
    if uv:
        for a, b in sorted(SUPPORTED, reverse=True):
            try:
                out = subprocess.run(
                    [uv, "python", "find", "--no-python-downloads", f"{a}.{b}"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                ).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                out = ""
            if out:
                found.append(Path(out))
    return found


def base_python(
    running: tuple[int, ...] = tuple(sys.version_info[:3]),
    executable: str = sys.executable,
    offered: Iterable[Path] | None = None,
    asked: str | None = None,
    program: str | None = None,
) -> BasePython:
    """The interpreter to build the envs with: `asked` (from $STREAMPETR_PYTHON) when given, else
    the running one, else one found on the host. Raises `UnsupportedPython` naming the interpreter,
    the supported versions and how to get one; for a `program` (``nox``), its note goes to stderr
    and a refusal exits, each one line ``<program>: ...``."""
    try:
        chosen = _choose(running, executable, offered, asked)
    except UnsupportedPython as exc:
        if program is None:
            raise
        raise SystemExit(f"{program}: {exc}") from None
    if chosen.note and program:
        print(f"{program}: {chosen.note}", file=sys.stderr)
    return chosen


def _choose(
    running: tuple[int, ...], executable: str, offered: Iterable[Path] | None, asked: str | None
) -> BasePython:
    asked = os.environ.get(ASKED_VARIABLE) if asked is None else asked
    here = f"Python {_dotted(running)} ({executable})"
    chosen = None
    if asked:
        version = python_version(Path(asked))
        if version is None or version[:2] not in SUPPORTED:
            found = "is not a CPython that runs" if version is None else f"is Python {_dotted(version)}"
            raise UnsupportedPython(
                f"${ASKED_VARIABLE}={asked} {found}; the envs need CPython {_label(SUPPORTED)}"
            )
        chosen = BasePython(
            asked, version, f"the envs use ${ASKED_VARIABLE}={asked} (Python {_dotted(version)})"
        )
    elif tuple(running[:2]) in SUPPORTED:
        return BasePython(executable, (running + (0, 0, 0))[:3])
    else:
        for python in candidates() if offered is None else offered:
            version = python_version(python)
            if version and version[:2] in SUPPORTED:
                note = f"{here} is not supported; the envs use Python {_dotted(version)} ({python})"
                chosen = BasePython(str(python), version, note)
                break
    if chosen and tuple(running[:2]) < TOOLING_NEEDS:  # nox's own process imports the tooling
        raise UnsupportedPython(
            f"{here} cannot run the sessions (the tooling needs Python {_dotted(TOOLING_NEEDS)}+); "
            f"Python {_dotted(chosen.version)} is at {chosen.path}: run nox with it "
            f"(`{chosen.path} -m venv .venv && . .venv/bin/activate && pip install -r requirements/nox.txt`, "
            "then `nox ...`)"
        )
    if chosen:
        return chosen
    raise UnsupportedPython(
        f"{here} cannot build the envs: they need CPython {_label(SUPPORTED)}, and none was found "
        "(python3.X on PATH, pyenv's versions, uv). Install one, e.g. `pyenv install 3.12`, "
        "`uv python install 3.12` or the distribution's python3.12 package, and rerun; "
        "docs/upstream-env.md#pythons says why these."
    )


def supported_on_host(offered: Iterable[Path] | None = None) -> dict[str, BasePython]:
    """minor -> the newest micro of each supported minor this host offers (the running Python and
    `candidates()`), e.g. {"3.11": ..., "3.13": ...}."""
    best: dict[str, BasePython] = {}
    here = Path(sys.executable)
    unique: dict[Path, Path] = {here.resolve(): here}  # one probe per interpreter, whatever its names
    for python in candidates() if offered is None else offered:
        unique.setdefault(python.resolve(), python)
    running = tuple(sys.version_info[:3]) if sys.implementation.name == "cpython" else None
    for python in unique.values():
        version = running if python is here else python_version(python)  # the running one: no probe
        if version and version[:2] in SUPPORTED:
            found = BasePython(str(python), version)
            if found.minor not in best or version > best[found.minor].version:
                best[found.minor] = found
    return dict(sorted(best.items()))


def other_pythons(
    base: BasePython, offered: Iterable[Path] | None = None, distribution: Path = DISTRIBUTION
) -> list[BasePython]:
    """Every supported Python of this host but `base`: the newest of each other minor
    (`supported_on_host`), and the distribution's own python3 when it is another version (Debian
    12's 3.11.2 beside pyenv's 3.11.7)."""
    others = [p for minor, p in supported_on_host(offered).items() if minor != base.minor]
    version = python_version(distribution)
    if version and version[:2] in SUPPORTED and version not in {p.version for p in (base, *others)}:
        others.append(BasePython(str(distribution), version))
    return others
