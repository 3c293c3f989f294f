"""Build mmcv-full 1.6.0 with compiled ops once per (python, torch, ops flavour) and cache the wheel.

The sdist's setup.py asks for `-std=c++14`; torch >= 2.13 headers need C++17 and torch >= 2.14
headers C++20, so the flag is rewritten before the build. A build compiles the reduced op set of
its flavour by default (`op_set.py`: the other ops raise a named error when called); `--full-ops`
compiles every op. A CUDA-ops build takes nvcc from `cuda_toolkit.py` (the host's or the index's),
compiles for the arch list, then checks its own `_ext` library: a cubin per arch, linked against
torch's CUDA libraries. No Python file of mmcv is changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import IO

import gpukit
from gpukit import Stopwatch, probe
from interpreter import install_command

from . import cuda_toolkit, op_set
from .errors import EnvBuildError
from .index_fetch import fetch_sdist
from .paths import store_wheel, wheel_cache
from .runlog import BuildLog
from .setup_py import read_version_in_globals
from .timings import eta_line, record

VERSION = "1.6.0"
SDIST = f"mmcv-full-{VERSION}.tar.gz"
SDIST_SHA256 = "2ac60fb2ff75ef93c53b68f10a095a4929d67aedbd95c02641e1e5258d12b874"
RECIPE = 2  # bump when the way the wheel is built changes: old cached wheels are then ignored
# What mmcv-full's setup.py imports at build time (it runs without build isolation): installed first.
BUILD_PREREQS = ("torch", "torchvision", "numpy", "setuptools", "wheel", "ninja")

# What a CUDA `_ext` must link against: torch's CUDA build and its CUDA runtime (the linker drops
# libtorch_cuda.so: mmcv uses nothing of it directly).
CUDA_NEEDED = ("libc10_cuda.so", "libcudart.so.")
EXT = re.compile(r"mmcv/_ext\..*\.so")  # the compiled ops inside a wheel (and site-packages)


def cxx_std(torch_version: str) -> str:
    """The C++ standard torch's headers need."""
    major, minor = (int(p) for p in torch_version.split("+")[0].split(".")[:2])
    return "c++20" if (major, minor) >= (2, 14) else "c++17"


def want_cuda_ops(info: dict, requested: bool | None) -> bool:
    """CUDA ops when asked for, else whenever the env's torch sees a GPU (`info`: gpukit's probe of
    the env's python; nvcc comes from the index when the host has none: a GPU node never gets a
    silent CPU-ops build)."""
    if requested is not None:
        return requested
    return bool(info["cuda_available"] and info["torch_cuda"])


def reduced_ops(cuda_ops: bool, full_ops: bool) -> bool:
    """The reduced op set of the build's flavour (CPU or CUDA), unless asked for the full set."""
    return not full_ops


def arch_key(arches: tuple[str, ...]) -> str:
    return "arch" + "_".join(a.replace("+PTX", "ptx") for a in arches)


def flavour(
    info: dict, cuda_ops: bool, reduced: bool = False, arches: tuple[str, ...] = cuda_toolkit.DEFAULT_ARCHES
) -> str:
    """The wheel cache key: a reduced wheel's key says so (and which set), a CUDA wheel its CUDA
    release and arch list, so no env is ever served another's wheel."""
    ops = f"cu{info['torch_cuda']}" if cuda_ops else "cpu"
    ops += f"ops-reduced-{op_set.label(cuda_ops)}" if reduced else "ops"
    if cuda_ops:
        ops += f"-{arch_key(arches)}"
    return f"{info['tag']}-torch{info['torch']}-{ops}-{cxx_std(info['torch'])}-r{RECIPE}"


def expected_facts(info: dict, cuda_ops: bool, reduced: bool, arches: tuple[str, ...]) -> dict:
    """What a cached wheel's build-info.json must say for the folder `flavour` names."""
    want: dict = {"op_set": "reduced" if reduced else "full", "cuda_ops": cuda_ops}
    if reduced:
        want["compiled_ops"] = list(op_set.kept_names(cuda_ops))
    if cuda_ops:
        want |= {"cuda": info["torch_cuda"], "arch_list": list(arches)}
    return want


def check_cached(dest: Path, want: dict) -> None:
    """A cached wheel's build facts must say what its folder name says (`expected_facts`); else a
    named error naming the folder and each fact that disagrees."""
    info_path = dest / "build-info.json"
    try:
        info = json.loads(info_path.read_text())
        if not isinstance(info, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise EnvBuildError(f"{info_path}: unreadable build facts ({exc}); delete {dest}, rerun.") from None
    got = {"op_set": "full", "cuda_ops": False, **info}  # wheels before these facts: full CPU builds
    bad = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
    if bad:
        said = ", ".join(f"{k} {bad[k]!r} (its folder: {want[k]!r})" for k in bad)
        raise EnvBuildError(
            f"{info_path}: the cached wheel's op set is {got.get('op_set')!r} and its build facts disagree "
            f"with its folder {dest.name}: {said}; delete {dest} and rerun."
        )


def sdist(python: Path, log: BuildLog | None = None) -> Path:
    """The verified mmcv-full sdist from the cache, downloaded once as a plain file: its setup.py is
    not run before `setup_py` edits it (also what a stack kit carries)."""
    dest = wheel_cache() / "sdist"
    path = dest / SDIST
    if not path.exists():
        if log:
            log.say(f"      downloading {SDIST} from the package index")
        return fetch_sdist(python, "mmcv-full", SDIST, SDIST_SHA256, dest)
    digest = gpukit.sha256(path)
    if digest != SDIST_SHA256:
        path.unlink()
        raise EnvBuildError(f"{path}: sha256 {digest} != pinned {SDIST_SHA256}; removed it, rerun.")
    return path


def unpack_source(archive: Path | IO[bytes], dest: Path) -> None:
    """Extract an upstream source archive (`gpukit.unpack`); a damaged one is a named error."""
    try:
        gpukit.unpack(archive, dest)
    except (OSError, tarfile.TarError) as exc:
        raise EnvBuildError(f"unpacking {getattr(archive, 'name', archive)}: {exc}") from None


def prepare_source(sdist: Path, dest: Path, std: str) -> Path:
    """The sdist unpacked into `dest` with its setup.py edited (C++ standard `std`, the version read
    on every Python): the source tree, ready for `pip wheel`."""
    unpack_source(sdist, dest)
    src = dest / f"mmcv-full-{VERSION}"
    _patch_std(src / "setup.py", std)
    read_version_in_globals(src / "setup.py")
    return src


def _patch_std(setup_py: Path, std: str) -> None:
    text = setup_py.read_text()
    if "-std=c++14" not in text:
        raise EnvBuildError(f"{setup_py}: no '-std=c++14' to replace; is this mmcv-full {VERSION}?")
    setup_py.write_text(text.replace("-std=c++14", f"-std={std}"))


def check_cuda_library(so: Path, cuobjdump: Path, arches: tuple[str, ...]) -> dict:
    """The CUDA facts of a built `_ext` library: a cubin for every arch (`cuobjdump --list-elf`)
    and torch's CUDA libraries among its NEEDED entries (`readelf -d`); a named error otherwise."""
    needed = re.findall(r"\(NEEDED\).*\[(.+?)\]", _tool(["readelf", "-d", so], so))
    missing = [lib for lib in CUDA_NEEDED if not any(n.startswith(lib) for n in needed)]
    cubins = sorted(set(re.findall(r"\.(sm_\w+?)\.cubin", _tool([cuobjdump, "--list-elf", so], so))))
    absent = [sm for a in arches if (sm := f"sm_{a.split('+')[0].replace('.', '')}") not in cubins]
    problems = [f"lacks cubins {', '.join(absent)}"] if absent else []
    problems += [f"does not link {', '.join(missing)}"] if missing else []
    if problems:
        raise EnvBuildError(
            f"{so}: built for CUDA but {'; '.join(problems)} (cubins {cubins}; NEEDED {needed})"
        )
    return {"cubins": cubins, "needed": needed}


def _tool(cmd: list, so: Path) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvBuildError(f"{' '.join(map(str, cmd[:2]))} {so.name} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def _check_wheel(wheel: Path, cuobjdump: Path, arches: tuple[str, ...], tmp: Path) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        (member,) = [n for n in zf.namelist() if EXT.fullmatch(n)]
        so = Path(zf.extract(member, tmp / "check"))
    return check_cuda_library(so, cuobjdump, arches)


def ensure_mmcv_wheel(
    python: Path,
    log: BuildLog,
    cuda: bool | None = None,
    full_ops: bool = False,
    arches: tuple[str, ...] | list[str] | None = None,
    toolkit: str = "auto",
) -> Path:
    """The folder holding the cached mmcv-full wheel for this env, built first if missing. `arches`:
    the CUDA arch list (default cuda_toolkit.DEFAULT_ARCHES); `toolkit`: where nvcc comes from."""
    info = probe(python)
    cuda_ops = want_cuda_ops(info, cuda)
    reduced = reduced_ops(cuda_ops, full_ops)
    arches = tuple(arches or cuda_toolkit.DEFAULT_ARCHES)
    dest = wheel_cache() / "mmcv-full" / flavour(info, cuda_ops, reduced, arches)
    if list(dest.glob("mmcv_full-*.whl")):
        check_cached(dest, expected_facts(info, cuda_ops, reduced, arches))
        log.say(f"      reusing cached wheel {dest.name}")
        return dest
    std = cxx_std(info["torch"])
    jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
    env = {"MAX_JOBS": jobs, "MMCV_WITH_OPS": "1", "FORCE_CUDA": "1" if cuda_ops else "0"}
    # no debug info: -g0 after Python's own -g (its CFLAGS) leaves the code as it is; the reduced CPU
    # set's compile took 47 s instead of 31 on 2 cores, its wheel 4.3 MB instead of 1.2 (RECIPE 2)
    env["CFLAGS"] = f"{os.environ.get('CFLAGS', '')} -g0".lstrip()
    facts: dict = {"op_set": "full"}
    if cuda_ops:
        tk = cuda_toolkit.choose(toolkit, info["torch_cuda"], python, log)
        env |= cuda_toolkit.build_env(tk, info["torch_site"], arches)
        facts |= {"toolkit": tk.facts(), "arch_list": list(arches)}
        log.say(
            f"      nvcc {tk.nvcc} ({tk.source}, CUDA {tk.release}, {tk.version}); arches {';'.join(arches)}"
        )
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # setup.py builds CUDA ops whenever it sees a GPU
    kind = f"mmcv{'-cuda' if cuda_ops else ''}-{'reduced' if reduced else 'full'}"
    ops = ("CUDA + CPU ops" if cuda_ops else "CPU ops") + (", reduced set" if reduced else ", full set")
    log.say(f"      compiling mmcv-full {VERSION} ({ops}, {std}, MAX_JOBS={jobs}); output in {log.path}")
    log.say(f"      {eta_line(kind)}")
    source = sdist(python, log)
    timer = Stopwatch()
    with tempfile.TemporaryDirectory(prefix="mmcv-build-") as tmp:
        src = prepare_source(source, Path(tmp), std)
        if reduced:
            cut = op_set.reduce_sources(src, cuda_ops)
            facts |= {"op_set": "reduced", "compiled_ops": list(cut.compiled_ops),
                      "stubbed_ops": len(cut.stubbed_ops), "units": list(cut.units)}  # fmt: skip
            log.say(
                f"      reduced op set: {len(cut.units)} units ({', '.join(cut.units)}); "
                f"{len(cut.stubbed_ops)} ops raise OpNotCompiledError (`--full-ops` builds them)"
            )
        out = Path(tmp) / "dist"
        log.run(
            [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", out, src],
            env=env,
            what="building mmcv-full",
        )
        (wheel,) = out.glob("mmcv_full-*.whl")
        if cuda_ops:
            facts |= _check_wheel(wheel, cuda_toolkit.cuobjdump(tk, python, log), arches, Path(tmp))
            log.say(
                f"      checked: cubins {', '.join(facts['cubins'])}; NEEDED {', '.join(facts['needed'])}"
            )
        seconds = timer.read()[0]
        # the torch it was built on, as build-info.json has always named it (where torch lies is no fact)
        built_on = {"py": info["tag"][2:], "torch": info["torch"], "cuda": info["torch_cuda"],
                    "cuda_available": info["cuda_available"]}  # fmt: skip
        meta = {**built_on, "cuda_ops": cuda_ops, "cxx_std": std, "max_jobs": jobs, **facts,
                "build_seconds": round(seconds, 1)}  # fmt: skip
        store_wheel(wheel, dest, meta)
    record(kind, seconds, timer.read()[1])
    return dest


def wheel_ext(wheel: Path) -> tuple[str, str]:
    """The `mmcv/_ext*.so` member of an mmcv-full wheel and its sha256; a named error unless one."""
    with zipfile.ZipFile(wheel) as zf:
        members = [n for n in zf.namelist() if EXT.fullmatch(n)]
        if len(members) != 1:
            raise EnvBuildError(f"{wheel}: holds {len(members)} mmcv/_ext libraries ({members}), not one")
        return members[0], hashlib.sha256(zf.read(members[0])).hexdigest()


def install_wheel(python: Path, purelib: Path, folder: Path, log: BuildLog) -> Path:
    """Install the mmcv-full wheel of `folder` into the env of `python` over any mmcv-full it holds
    (pip would keep another build of the same version: CPU or CUDA ops, another op set or arch list),
    without its dependencies; then check that the installed `_ext` library is that wheel's file.
    Returns the installed library (under `purelib`)."""
    wheels = sorted(folder.glob("mmcv_full-*.whl"))
    if len(wheels) != 1:
        raise EnvBuildError(f"{folder}: {len(wheels)} mmcv-full wheels, not one; delete the folder and rerun")
    (wheel,) = wheels
    log.run(
        install_command(python, "--no-deps", "--force-reinstall", wheel),
        what="install mmcv-full (this build's wheel)",
    )
    member, want = wheel_ext(wheel)
    installed = purelib / member
    got = gpukit.sha256(installed) if installed.is_file() else "(no such file)"
    if got != want:
        raise EnvBuildError(
            f"{installed}: sha256 {got}, not that of {member} in {wheel} ({want}): the env holds another "
            "mmcv-full build than its choices; rebuild it: nox -s upstream_env -- --clean"
        )
    return installed
