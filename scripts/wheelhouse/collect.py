"""Collect the wheels of each environment into one folder (through the user's pip configuration) and
write its hash-pinned lock, resolved from the folder alone and checked against ``constraints/<env>.txt``."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT
from upstream_env import NO_DEPS, SourceBuilt, normalise, read_pins

from .requirement_locks import Locked, check_pins, resolve, run_pip, write_lock

SOURCE_BUILT = "source-built.json"  # locks/: the wheels this project builds, and where their cache keeps them


@dataclass(frozen=True)
class Wheelhouse:
    """A wheelhouse folder that ``python``'s pip fills: the steps every collector takes (here, gpu_kits')."""

    python: str
    folder: Path

    def pip(self, args: Sequence[object], what: str) -> str:
        """``pip *args`` with the user's pip configuration; a failure raises WheelhouseError."""
        return run_pip(self.python, args, what)

    def lock(self, name: str, args: Sequence[object], what: str, header: str, pins: Path | None = None,
             unpinned: Collection[str] = ()) -> list[Locked]:  # fmt: skip
        """What ``pip install args`` installs from the folder alone, hash-locked in ``locks/<name>``; the
        versions that ``pins`` (a file of the project) pins are checked, the names ``unpinned`` aside."""
        entries = resolve(self.python, self.folder, args, what)
        if pins:
            checked = [e for e in entries if normalise(e.name) not in unpinned]
            check_pins(checked, read_pins(pins), pins.relative_to(ROOT).as_posix())
        write_lock(self.folder / "locks" / name, entries, self.folder, header)
        return entries

    def add_built(self, built: SourceBuilt) -> Path:
        """The files this project builds (``built``) into the folder, their facts into
        ``locks/source-built.json`` (where the offline side seeds the env builder's cache from)."""
        for path in built.files():
            shutil.copy2(path, self.folder / path.name)
        facts = self.folder / "locks" / SOURCE_BUILT
        facts.write_text(json.dumps(built.facts(), indent=1) + "\n")
        return facts

    def add_toolkit(self, pattern: str = "cuda-toolkit-*.txt", only: str | None = None) -> list[str]:
        """The wheels of the CUDA toolkit locks ``constraints/<pattern>`` (hashes required) into the
        folder, each lock into its ``locks/``; ``only``: that package's lines alone. The wheels' names."""
        names, keep = [], f"{only}==" if only else ""
        for lock in sorted((ROOT / "constraints").glob(pattern)):
            with tempfile.TemporaryDirectory(prefix="wheelhouse-toolkit-") as tmp:
                req, got = Path(tmp) / "req.txt", Path(tmp) / "got"
                lines = [ln for ln in lock.read_text().splitlines() if ln.startswith(keep)]
                req.write_text("\n".join(lines) + "\n")
                args = ["download", "-q", "--no-deps", "--require-hashes", "-d", got, "-r", req]
                self.pip(args, f"collecting the wheels of {lock.name}")
                for wheel in sorted(got.glob("*.whl")):
                    shutil.copy2(wheel, self.folder / wheel.name)
                    names.append(wheel.name)
            shutil.copy2(lock, self.folder / "locks" / lock.name)
        return names


def header(env: str, requirements: str) -> str:
    return (
        f"The {env} env, hash-pinned, resolved from this wheelhouse alone (nox -s wheelhouse).\n"
        f"pip install --no-index --find-links <wheelhouse> --require-hashes -r <this file>\n"
        f"Made from {requirements}."
    )


def collect_env(
    house: Wheelhouse, name: str, links: Path | None = None, *, no_deps: bool = False
) -> list[Locked]:
    """Wheels of ``requirements/<name>.txt`` under ``constraints/<name>.txt`` (sdist-only ones
    built to wheels; mmcv-full only as the wheel in ``links``), then its lock ``locks/<name>.txt``.
    ``no_deps``: ``requirements/<name>-nodeps.txt`` instead (installed with ``--no-deps``: their own
    pins would conflict, nuscenes-devkit's numpy<2), locked in ``locks/<name>-nodeps.txt``."""
    stem = f"{name}-nodeps" if no_deps else name
    req, con = ROOT / "requirements" / f"{stem}.txt", ROOT / "constraints" / f"{name}.txt"
    flags = ["--only-binary", "mmcv-full", *(["--no-deps"] if no_deps else [])]
    fetch = ["wheel", "-q", "-w", house.folder, *flags, *(["--find-links", links] if links else [])]
    house.pip([*fetch, "-c", con, "-r", req], f"collecting the {stem} wheels")
    what, lock_header = f"resolving {stem} from {house.folder}", header(stem, f"requirements/{stem}.txt")
    return house.lock(f"{stem}.txt", [*flags, "-c", con, "-r", req], what, lock_header, con)


def collect_nox(house: Wheelhouse) -> list[Locked]:
    """nox itself (``requirements/nox.txt`` and its dependencies), to install it offline."""
    req = ROOT / "requirements" / "nox.txt"
    house.pip(["wheel", "-q", "-w", house.folder, "-r", req], "collecting nox")
    what = f"resolving nox from {house.folder}"
    return house.lock("nox.txt", ["-r", req], what, header("nox", "requirements/nox.txt"), req)


def collect_upstream(house: Wheelhouse) -> list[Locked]:
    """The OpenMMLab env: its index wheels, the cached mmcv-full wheel (and sdist, to compile other
    ops offline), the mmdet3d wheel, the locks ``upstream.txt`` and ``upstream-nodeps.txt``
    (installed with ``--no-deps``, as the env builder does) and ``source-built.json``."""
    built = SourceBuilt.of_env()  # the env built first where it is not current
    entries = collect_env(house, "upstream", links=built.mmcv)
    con = ROOT / "constraints" / "upstream.txt"
    with tempfile.TemporaryDirectory(prefix="wheelhouse-nodeps-") as tmp:
        house.pip(["wheel", "-q", "--no-deps", "-w", tmp, "-c", con, *NO_DEPS], "collecting " + str(NO_DEPS))
        for wheel in Path(tmp).glob("*.whl"):
            shutil.copy2(wheel, house.folder / wheel.name)
    house.add_built(built)  # the wheels this project builds, the sdist
    args, what = ["--no-deps", *NO_DEPS, "mmdet3d"], "resolving the no-deps wheels"
    nodeps = house.lock(
        "upstream-nodeps.txt", args, what, header("upstream (--no-deps part)", "upstream_env"), con
    )
    house.add_toolkit()  # nvcc for CUDA ops offline
    return entries + nodeps
