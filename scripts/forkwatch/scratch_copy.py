"""A throw-away copy of the project (its own files, never a checkout, `.nox` or data), a private
upstream cache whose mirrors are `--shared` clones of the real ones (never written), and the project's
commands run as subprocesses inside that copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from overlaytool import REPO_ROOT, OverlayError, load_targets

from .errors import ForkwatchError

SCRIPTS = REPO_ROOT / "scripts"  # this repository's tooling (overlaytool, forkwatch)


@dataclass(frozen=True)
class Call:
    """A finished command: its exit status (124 on a timeout) and stdout + stderr together."""

    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.strip().splitlines()[-lines:])


def call(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Call:
    """Run `cmd`; never raises for a failing or hanging command (the Call says what happened)."""
    full = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **env}
    try:
        done = subprocess.run(
            cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace", timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Call(124, f"{out}\n(timed out after {timeout:.0f} s)")
    except OSError as exc:
        return Call(127, f"cannot run {cmd[0]}: {exc}")
    return Call(done.returncode, done.stdout)


def overlaytool(project: Path, cache: Path, *args: str, timeout: float = 1800) -> Call:
    """`python -m overlaytool --root <project> args` with the private cache."""
    env = {"PYTHONPATH": str(SCRIPTS), "STREAMPETR_DALI_CACHE": str(cache)}
    return call([sys.executable, "-m", "overlaytool", "--root", str(project), *args], project, env, timeout)


SKIP = {".git", ".nox", "__pycache__", ".pytest_cache", ".ruff_cache", "data", "work_dirs", "out"}


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)


def project_files(root: Path) -> list[str]:
    """The project's own files, relative to `root`: git's tracked and untracked-not-ignored files in a
    git work tree; elsewhere every file outside the checkouts (`upstream/*/`) and generated folders."""
    listed = _git("ls-files", "-z", "-co", "--exclude-standard", cwd=root)
    if listed.returncode == 0 and _git("rev-parse", "--show-prefix", cwd=root).stdout.strip() == "":
        return sorted({p for p in listed.stdout.split("\0") if p and (root / p).is_file()})
    files = []
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if d not in SKIP and rel.parts != ("upstream",)]  # no checkout
        files += [(rel / n).as_posix() for n in names if not n.startswith("rebase-report.")]
    return sorted(f for f in files if (root / f).is_file())


def copy_project(root: Path, dest: Path) -> None:
    """Copy the project's own files (modes kept, symlinks as links) into the empty folder `dest`."""
    for rel in project_files(root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        source = root / rel
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)


def private_cache(real: Path, dest: Path) -> None:
    """A cache at `dest` whose mirrors are `--shared` clones of the real cache's mirrors."""
    mirrors = sorted((real / "mirrors").glob("*.git"))
    if not mirrors:
        raise ForkwatchError(f"the upstream cache {real} holds no mirror: run `nox -s fetch` first")
    (dest / "mirrors").mkdir(parents=True)
    for mirror in mirrors:
        done = _git(
            "clone", "--quiet", "--mirror", "--shared", str(mirror), str(dest / "mirrors" / mirror.name)
        )
        if done.returncode != 0:
            raise ForkwatchError(f"cannot clone the cache mirror {mirror}: {done.stderr.strip()}")


@contextmanager
def reading(root: Path) -> Iterator[None]:
    """Hold the shared lock of every pinned mirror: no fetch swaps a mirror the copy reads from."""
    try:
        with ExitStack() as stack:
            for target in load_targets(root):
                stack.enter_context(target.mirror_read_lock("forkwatch (a throw-away copy)"))
            yield
    except OverlayError as exc:
        raise ForkwatchError(f"cannot read the upstream cache: {exc}") from None


@contextmanager
def scratch(root: Path, real_cache: Path, parent: Path | None = None) -> Iterator[tuple[Path, Path]]:
    """(project copy, private cache) in a fresh temporary folder, removed afterwards whatever happens;
    the real cache's pinned mirrors are read-locked meanwhile."""
    base = Path(tempfile.mkdtemp(prefix="forkwatch-", dir=parent))
    try:
        with reading(root):
            copy_project(root, base / "project")
            private_cache(real_cache, base / "cache")
            yield base / "project", base / "cache"
    finally:
        shutil.rmtree(base, ignore_errors=True)
