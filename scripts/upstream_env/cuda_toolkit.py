"""The nvcc that compiles mmcv-full's CUDA ops: the host's, or one from the package index.

`--toolkit system` takes the nvcc on PATH (or `$CUDA_HOME/bin/nvcc`); `index` installs the toolkit
of torch's CUDA release from its hash lock (e.g. `constraints/cuda-toolkit-13.0.txt`) into the wheel
cache's `cuda-toolkit/<lock>-<8 hex of the lock>/`, once per machine, shared by every env and
checkout; `auto` takes the system nvcc when its release is torch's, else the index one. A cached
toolkit is reused only when its facts (lock digest, nvcc release) still hold; else it is rebuilt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from gpukit import sha256
from interpreter import install_command

from .errors import EnvBuildError
from .paths import ROOT, wheel_cache
from .runlog import BuildLog

MODES = ("auto", "index", "system")
DEFAULT_ARCHES = ("8.0", "8.6", "8.9", "9.0")  # A100, A10/3090, L40/4090, H100/H200
ARCH = re.compile(r"^\d+\.\d+[af]?(\+PTX)?$")
FACTS = "toolkit.json"
# torch's ATen/cuda/CUDAContextLight.h includes these; the toolkit wheels do not ship them, torch's
# own CUDA library wheels do (site-packages/nvidia/cu<major>/include).
LIBRARY_HEADERS = ("cublas_v2.h", "cusparse.h", "cusolverDn.h")
CUOBJDUMP = "nvidia-cuda-cuobjdump"  # the lock's wheel with cuobjdump alone


@dataclass(frozen=True)
class Toolkit:
    source: str  # "system" or "index"
    home: Path  # CUDA_HOME: bin/nvcc, include/, lib/
    release: str  # "13.0"
    version: str  # nvcc's full version, "V13.0.88"

    @property
    def nvcc(self) -> Path:
        return self.home / "bin" / "nvcc"

    def facts(self) -> dict:
        return {**asdict(self), "home": str(self.home), "nvcc": str(self.nvcc)}


def parse_arch_list(text: str) -> tuple[str, ...]:
    """`"8.0;8.6"` or `"8.0 8.6"` or `"8.0,8.6"` -> ("8.0", "8.6"); anything else a named error."""
    arches = tuple(a for a in re.split(r"[;,\s]+", text.strip()) if a)
    bad = [a for a in arches if not ARCH.match(a)]
    if not arches or bad:
        raise EnvBuildError(f"--cuda-arch {text!r}: expected compute capabilities like '8.0;9.0' ({bad})")
    return arches


def lock_file(cuda: str) -> Path:
    return ROOT / "constraints" / f"cuda-toolkit-{cuda}.txt"


def nvcc_version(nvcc: Path | str) -> tuple[str, str]:
    """(release, full version) from `nvcc --version`: ("13.0", "V13.0.88")."""
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise EnvBuildError(f"{nvcc} --version failed: {exc}") from None
    match = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    if not match:
        raise EnvBuildError(f"{nvcc} --version: no 'release X.Y, VX.Y.Z' in its output:\n{out}")
    return match.group(1), match.group(2)


def _home_of(nvcc: str) -> Path:
    """The real CUDA_HOME of an nvcc (it may be a wrapper script elsewhere on PATH): nvcc's own
    `_HERE_` (its bin folder) from a dry run."""
    cmd = [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull]  # prints, compiles nothing
    proc = subprocess.run(cmd, capture_output=True, text=True)
    match = re.search(r"^#\$ _HERE_=(.+)$", proc.stdout + proc.stderr, re.M)
    home = Path(match.group(1).strip()).resolve().parent if match else Path(nvcc).resolve().parents[1]
    if not (home / "include" / "cuda_runtime.h").is_file():
        raise EnvBuildError(
            f"{nvcc}: its toolkit ({home}) has no include/cuda_runtime.h; set CUDA_HOME to it"
        )
    return home


def system_toolkit() -> Toolkit | None:
    """The host's toolkit: `$CUDA_HOME/bin/nvcc`, else nvcc on PATH; None when there is none."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    nvcc = str(Path(home) / "bin" / "nvcc") if home and (Path(home) / "bin" / "nvcc").is_file() else None
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        return None
    release, version = nvcc_version(nvcc)
    return Toolkit("system", _home_of(nvcc), release, version)


def _lock_key(lock: Path) -> str:
    return f"{lock.stem}-{sha256(lock)[:8]}"


def _cached(folder: Path, lock: Path, cuda: str) -> Toolkit | None:
    """A cached toolkit whose facts hold: the same lock, an nvcc of that release. Else None."""
    try:
        facts = json.loads((folder / FACTS).read_text())
        home = Path(facts["home"])
        if facts.get("lock_sha256") != sha256(lock) or home.parents[1] != folder:
            return None
        release, version = nvcc_version(home / "bin" / "nvcc")
    except (OSError, ValueError, KeyError, TypeError, EnvBuildError):
        return None
    return Toolkit("index", home, release, version) if release == cuda else None


def index_toolkit(cuda: str, python: Path, log: BuildLog) -> Toolkit:
    """The toolkit of CUDA `cuda` from the package index (or the wheelhouse: pip honours
    PIP_NO_INDEX/PIP_FIND_LINKS), installed once into the wheel cache."""
    lock = lock_file(cuda)
    if not lock.is_file():
        raise EnvBuildError(
            f"torch's CUDA is {cuda}; this project has no toolkit lock for it ({lock.relative_to(ROOT)}). "
            f"Install a CUDA {cuda} toolkit (nvcc on PATH or $CUDA_HOME) and build with `--toolkit system`, "
            f"or add that lock (requirements/cuda-toolkit.txt lists its packages)."
        )
    folder = wheel_cache() / "cuda-toolkit" / _lock_key(lock)
    found = _cached(folder, lock, cuda)
    if found is not None:
        log.say(f"      nvcc {found.version} from the cached index toolkit {folder.name}")
        return found
    partial = folder.with_name(folder.name + ".partial")
    log.say(f"      installing the CUDA {cuda} toolkit from {lock.relative_to(ROOT)} into {folder}")
    home = _pip_target(python, lock, lock, partial, "nvcc", log)
    for runtime in (home / "lib").glob("libcudart.so.*"):  # torch links `-lcudart`: the unversioned name
        if re.fullmatch(r"libcudart\.so\.\d+", runtime.name) and not (home / "lib" / "libcudart.so").exists():
            (home / "lib" / "libcudart.so").symlink_to(runtime.name)
    release, version = nvcc_version(home / "bin" / "nvcc")
    if release != cuda:
        raise EnvBuildError(f"{lock}: its nvcc says release {release}, torch needs {cuda}")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    home = folder / home.relative_to(partial)
    toolkit = Toolkit("index", home, release, version)
    facts = {**toolkit.facts(), "lock": lock.name, "lock_sha256": sha256(lock)}
    (folder / FACTS).write_text(json.dumps(facts, indent=1) + "\n")
    return toolkit


def _pip_target(
    python: Path, lock: Path, requirements: Path, partial: Path, tool: str, log: BuildLog
) -> Path:
    """`requirements` (the hash lock `lock`, or lines of it) installed into `partial` (`pip --target`,
    hashes required); the one `nvidia/<cu>/` folder holding `bin/<tool>`. An unreachable index: the
    ways out, named."""
    shutil.rmtree(partial, ignore_errors=True)
    cuda = lock.stem.removeprefix("cuda-toolkit-")
    try:
        log.run(
            install_command(python, "--no-deps", "--require-hashes", "--target", partial, "-r", requirements),
            what=f"pip install the CUDA {cuda} {tool} from {lock.name}",
        )  # fmt: skip
    except EnvBuildError as exc:
        raise EnvBuildError(
            f"{exc}\nThe CUDA ops need the CUDA {cuda} {tool}: give the index (or a wheelhouse with the "
            f"toolkit wheels: STREAMPETR_WHEELHOUSE, made by `nox -s wheelhouse`), or a CUDA {cuda} toolkit "
            f"on PATH with `--toolkit system`; `--no-cuda` builds CPU ops (a GPU run then stops at mmdet's "
            f"FocalLoss)."
        ) from None
    homes = sorted(partial.glob(f"nvidia/*/bin/{tool}"))
    if len(homes) != 1:
        raise EnvBuildError(f"{partial}: expected one nvidia/<cu>/bin/{tool} after the install, not {homes}")
    return homes[0].parents[1]


def _major(release: str) -> str:
    return release.split(".")[0]


def choose(mode: str, cuda: str, python: Path, log: BuildLog) -> Toolkit:
    """The toolkit for torch's CUDA release `cuda` ("13.0") under `--toolkit mode`."""
    if mode not in MODES:
        raise EnvBuildError(f"--toolkit {mode!r}: one of {', '.join(MODES)}")
    system = None if mode == "index" else system_toolkit()
    if mode == "system":
        if system is None:
            raise EnvBuildError(
                "--toolkit system: no nvcc on PATH or in $CUDA_HOME/bin (`--toolkit index`: the index one)"
            )
        if _major(system.release) != _major(cuda):
            raise EnvBuildError(
                f"--toolkit system: {system.nvcc} is CUDA {system.release}, torch is CUDA {cuda}; "
                "torch refuses another major (`--toolkit index` takes torch's from the index)"
            )
        return system
    if system is not None and system.release == cuda:
        return system
    same_major = system is not None and _major(system.release) == _major(cuda)
    if mode == "auto" and same_major and not lock_file(cuda).is_file():
        return system  # no lock for torch's release: the system nvcc of its major is the next best
    return index_toolkit(cuda, python, log)


def cuobjdump(toolkit: Toolkit, python: Path, log: BuildLog) -> Path:
    """A cuobjdump to check a build's cubins with: the toolkit's, else one on PATH, else the cached
    index toolkit's of the same release, else its lock's cuobjdump wheel alone (0.3 MB), installed
    once into the wheel cache (a system toolkit may have nvcc without it, as this host's has)."""
    found = toolkit.home / "bin" / "cuobjdump"
    if found.is_file():
        return found
    if on_path := shutil.which("cuobjdump"):
        return Path(on_path)
    lock = lock_file(toolkit.release)
    if not lock.is_file():
        raise EnvBuildError(
            f"no cuobjdump in {toolkit.home}/bin or on PATH to check the build's cubins, and no toolkit lock "
            f"for CUDA {toolkit.release} ({lock.relative_to(ROOT)}) to take one from: put cuobjdump on PATH"
        )
    if (full := _cached(wheel_cache() / "cuda-toolkit" / _lock_key(lock), lock, toolkit.release)) is not None:
        return full.home / "bin" / "cuobjdump"
    folder = wheel_cache() / "cuda-toolkit" / f"cuobjdump-{_lock_key(lock)}"
    found = next(iter(sorted(folder.glob("nvidia/*/bin/cuobjdump"))), None)
    if found is None or subprocess.run([found, "--version"], capture_output=True).returncode != 0:
        partial = folder.with_name(folder.name + ".partial")
        log.say(f"      installing {CUOBJDUMP} from {lock.relative_to(ROOT)} into {folder}")
        with tempfile.TemporaryDirectory(prefix="cuobjdump-") as tmp:
            line = Path(tmp) / "cuobjdump.txt"
            line.write_text(
                "".join(f"{ln}\n" for ln in lock.read_text().splitlines() if ln.startswith(CUOBJDUMP))
            )
            _pip_target(python, lock, line, partial, "cuobjdump", log)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        found = next(iter(sorted(folder.glob("nvidia/*/bin/cuobjdump"))))
    return found


def library_headers(toolkit: Toolkit, torch_site: str) -> Path | None:
    """Where torch's CUDA library headers are, when the toolkit lacks them (pip and minimal system
    toolkits): torch's own `nvidia/cu<major>/include`. None when the toolkit has them."""
    if all((toolkit.home / "include" / h).is_file() for h in LIBRARY_HEADERS):
        return None
    site = Path(torch_site)
    for include in [
        *site.glob(f"nvidia/cu{_major(toolkit.release)}/include"),
        *sorted(site.glob("nvidia/*/include")),
    ]:
        if all((include / h).is_file() for h in LIBRARY_HEADERS):
            return include
    raise EnvBuildError(
        f"{', '.join(LIBRARY_HEADERS)}: neither {toolkit.home}/include nor torch's nvidia/*/include under "
        f"{torch_site} has them; torch's ATen/cuda headers include them (a torch from PyPI installs them)."
    )


def build_env(toolkit: Toolkit, torch_site: str, arches: tuple[str, ...]) -> dict[str, str]:
    """The environment of a CUDA build: CUDA_HOME, nvcc first on PATH, the arch list, and
    CUDA_INC_PATH (torch's cpp_extension adds it to the include path) for the library headers."""
    env = {
        "CUDA_HOME": str(toolkit.home),
        "PATH": f"{toolkit.home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "TORCH_CUDA_ARCH_LIST": ";".join(arches),
    }
    if (include := library_headers(toolkit, torch_site)) is not None:
        env["CUDA_INC_PATH"] = str(include)
    return env
