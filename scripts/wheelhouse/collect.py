"""Collect the wheels of each environment into one folder and write its hash-pinned lock.

Downloads go through the user's pip configuration (their index or mirror, pip's cache);
the lock is then resolved from the folder alone, so what it names is exactly what an offline
install finds there, and it is checked against ``constraints/<env>.txt``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from overlaytool import REPO_ROOT as ROOT

from .requirement_locks import Locked, check_pins, read_pins, resolve, run_pip, write_lock

SOURCE_BUILT = "source-built.json"  # locks/: the wheels this project builds, and where their cache keeps them


def header(env: str, requirements: str) -> str:
    return (
        f"The {env} env, hash-pinned, resolved from this wheelhouse alone (nox -s wheelhouse).\n"
        f"pip install --no-index --find-links <wheelhouse> --require-hashes -r <this file>\n"
        f"Made from {requirements}."
    )


def collect_env(
    python: str, out: Path, name: str, links: Path | None = None, *, no_deps: bool = False
) -> list[Locked]:
    """Wheels of ``requirements/<name>.txt`` under ``constraints/<name>.txt`` (sdist-only ones
    built to wheels; mmcv-full only as the wheel in ``links``), then its lock ``locks/<name>.txt``.
    ``no_deps``: ``requirements/<name>-nodeps.txt`` instead (installed with ``--no-deps``: their own
    pins would conflict, nuscenes-devkit's numpy<2), locked in ``locks/<name>-nodeps.txt``."""
    stem = f"{name}-nodeps" if no_deps else name
    req, con = ROOT / "requirements" / f"{stem}.txt", ROOT / "constraints" / f"{name}.txt"
    flags = ["--only-binary", "mmcv-full", *(["--no-deps"] if no_deps else [])]
    fetch = ["wheel", "-q", "-w", out, *flags, *(["--find-links", links] if links else [])]
    run_pip(python, [*fetch, "-c", con, "-r", req], f"collecting the {stem} wheels")
    entries = resolve(python, out, [*flags, "-c", con, "-r", req], f"resolving {stem} from {out}")
    check_pins(entries, read_pins(con), f"constraints/{name}.txt")
    write_lock(out / "locks" / f"{stem}.txt", entries, out, header(stem, f"requirements/{stem}.txt"))
    return entries


def collect_nox(python: str, out: Path) -> list[Locked]:
    """nox itself (``requirements/nox.txt`` and its dependencies), to install it offline."""
    req = ROOT / "requirements" / "nox.txt"
    run_pip(python, ["wheel", "-q", "-w", out, "-r", req], "collecting nox")
    entries = resolve(python, out, ["-r", req], f"resolving nox from {out}")
    check_pins(entries, read_pins(req), "requirements/nox.txt")
    write_lock(out / "locks" / "nox.txt", entries, out, header("nox", "requirements/nox.txt"))
    return entries


def collect_upstream(python: str, out: Path) -> list[Locked]:
    """The OpenMMLab env: its index wheels, the cached mmcv-full wheel (and sdist, to compile other
    ops offline), the mmdet3d wheel, the locks ``upstream.txt`` and ``upstream-nodeps.txt``
    (installed with ``--no-deps``, as the env builder does) and ``source-built.json``."""
    from upstream_env import NO_DEPS, SourceBuilt

    built = SourceBuilt.of_env()  # the env built first where it is not current
    entries = collect_env(python, out, "upstream", links=built.mmcv)
    con = ROOT / "constraints" / "upstream.txt"
    with tempfile.TemporaryDirectory(prefix="wheelhouse-nodeps-") as tmp:
        run_pip(
            python, ["wheel", "-q", "--no-deps", "-w", tmp, "-c", con, *NO_DEPS], "collecting " + str(NO_DEPS)
        )
        for wheel in [*Path(tmp).glob("*.whl"), *built.files()]:  # the wheels this project builds, the sdist
            shutil.copy2(wheel, out / wheel.name)
    nodeps = [
        e for e in resolve(python, out, ["--no-deps", *NO_DEPS, "mmdet3d"], "resolving the no-deps wheels")
    ]
    check_pins(nodeps, read_pins(con), "constraints/upstream.txt")
    write_lock(
        out / "locks" / "upstream-nodeps.txt",
        nodeps,
        out,
        header("upstream (--no-deps part)", "upstream_env"),
    )
    collect_toolkit(python, out)  # nvcc for CUDA ops offline
    (out / "locks" / SOURCE_BUILT).write_text(json.dumps(built.facts(), indent=1) + "\n")
    return entries + nodeps


def collect_toolkit(
    python: str, out: Path, pattern: str = "cuda-toolkit-*.txt", only: str | None = None
) -> list[str]:
    """The wheels of the CUDA toolkit locks ``constraints/<pattern>`` (hashes required) into ``out``,
    each lock into ``out/locks``; ``only``: that package's lines alone. The wheels' file names."""
    names = []
    for lock in sorted((ROOT / "constraints").glob(pattern)):
        with tempfile.TemporaryDirectory(prefix="wheelhouse-toolkit-") as tmp:
            req, got = Path(tmp) / "req.txt", Path(tmp) / "got"
            lines = [ln for ln in lock.read_text().splitlines() if only is None or ln.startswith(f"{only}==")]
            req.write_text("\n".join(lines) + "\n")
            args = ["download", "-q", "--no-deps", "--require-hashes", "-d", got, "-r", req]
            run_pip(python, args, f"collecting the wheels of {lock.name}")
            for wheel in sorted(got.glob("*.whl")):
                shutil.copy2(wheel, out / wheel.name)
                names.append(wheel.name)
        shutil.copy2(lock, out / "locks" / lock.name)
    return names
