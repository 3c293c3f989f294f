"""Build mmcv-full 1.6.0 with compiled ops once per (python, torch, ops flavour) and cache the wheel.

The sdist's setup.py asks for `-std=c++14`; torch >= 2.13 headers need C++17 and torch >= 2.14
headers C++20, so the flag is rewritten before the build. A CPU-ops build compiles the reduced op
set by default (`op_set.py`: the other ops raise a named error when called); a CUDA-ops build and
`--full-ops` compile every op. No Python file of mmcv is changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from . import EnvBuildError, op_set
from .paths import store_wheel, wheel_cache
from .runlog import BuildLog, children_cpu
from .timings import eta_line, record

VERSION = "1.6.0"
SDIST = f"mmcv-full-{VERSION}.tar.gz"
SDIST_SHA256 = "2ac60fb2ff75ef93c53b68f10a095a4929d67aedbd95c02641e1e5258d12b874"
RECIPE = 1  # bump when the way the wheel is built changes: old cached wheels are then ignored

PROBE = (
    "import json, sys, torch; print(json.dumps({'py': '%d%d' % sys.version_info[:2], "
    "'torch': torch.__version__, 'cuda': torch.version.cuda, "
    "'cuda_available': torch.cuda.is_available()}))"
)


def probe(python: Path) -> dict:
    """Python tag, torch version and CUDA facts of the env's interpreter."""
    out = subprocess.run([str(python), "-c", PROBE], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def cxx_std(torch_version: str) -> str:
    """The C++ standard torch's headers need."""
    major, minor = (int(p) for p in torch_version.split("+")[0].split(".")[:2])
    return "c++20" if (major, minor) >= (2, 14) else "c++17"


def want_cuda_ops(info: dict, requested: bool | None) -> bool:
    """CUDA ops when asked for, else when a GPU and nvcc are both present."""
    if requested is not None:
        return requested
    return bool(info["cuda_available"] and info["cuda"] and shutil.which("nvcc"))


def reduced_ops(cuda_ops: bool, full_ops: bool) -> bool:
    """The reduced op set: CPU ops only, and not asked for the full set. CUDA builds are always full."""
    return not cuda_ops and not full_ops


def flavour(info: dict, cuda_ops: bool, reduced: bool = False) -> str:
    """The wheel cache key: a reduced wheel's key says so (and which set), so no full or CUDA env
    is ever served one."""
    ops = f"cu{info['cuda']}" if cuda_ops else "cpu"
    ops += f"ops-reduced-{op_set.label()}" if reduced and not cuda_ops else "ops"
    return f"cp{info['py']}-torch{info['torch']}-{ops}-{cxx_std(info['torch'])}-r{RECIPE}"


def check_cached(dest: Path, reduced: bool) -> None:
    """A cached wheel's build facts must say the op set its folder name says; else a named error."""
    info_path = dest / "build-info.json"
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as exc:
        raise EnvBuildError(f"{info_path}: unreadable build facts ({exc}); delete {dest}, rerun.") from None
    want = "reduced" if reduced else "full"
    got = info.get("op_set", "full") if isinstance(info, dict) else None  # wheels before op_set: full
    if got != want or (reduced and info.get("compiled_ops") != list(op_set.kept_names())):
        raise EnvBuildError(
            f"{info_path}: the cached wheel's op set is {got!r} (ops {info.get('compiled_ops')}), "
            f"but its folder is the {want} set's; delete {dest} and rerun."
        )


def _sdist(python: Path, log: BuildLog) -> Path:
    """The verified mmcv-full sdist from the cache, downloaded once."""
    dest = wheel_cache() / "sdist"
    path = dest / SDIST
    if not path.exists():
        dest.mkdir(parents=True, exist_ok=True)
        log.run(
            [python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", dest,
             f"mmcv-full=={VERSION}"],
            what="downloading the mmcv-full sdist",
        )  # fmt: skip
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        path.unlink()
        raise EnvBuildError(f"{SDIST}: sha256 {digest} != pinned {SDIST_SHA256}; removed it, rerun.")
    return path


def _patch_std(setup_py: Path, std: str) -> None:
    text = setup_py.read_text()
    if "-std=c++14" not in text:
        raise EnvBuildError(f"{setup_py}: no '-std=c++14' to replace; is this mmcv-full {VERSION}?")
    setup_py.write_text(text.replace("-std=c++14", f"-std={std}"))


def ensure_mmcv_wheel(python: Path, log: BuildLog, cuda: bool | None = None, full_ops: bool = False) -> Path:
    """The folder holding the cached mmcv-full wheel for this env, built first if missing."""
    info = probe(python)
    cuda_ops = want_cuda_ops(info, cuda)
    reduced = reduced_ops(cuda_ops, full_ops)
    dest = wheel_cache() / "mmcv-full" / flavour(info, cuda_ops, reduced)
    if list(dest.glob("mmcv_full-*.whl")):
        check_cached(dest, reduced)
        log.say(f"      reusing cached wheel {dest.name}")
        return dest
    std = cxx_std(info["torch"])
    jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
    kind = "mmcv-reduced" if reduced else ("mmcv-cuda" if cuda_ops else "mmcv-full")
    ops = "CUDA + CPU ops" if cuda_ops else ("CPU ops, reduced set" if reduced else "CPU ops, full set")
    log.say(f"      compiling mmcv-full {VERSION} ({ops}, {std}, MAX_JOBS={jobs}); output in {log.path}")
    log.say(f"      {eta_line(kind)}")
    sdist = _sdist(python, log)
    started, cpu_before = time.monotonic(), children_cpu()
    with tempfile.TemporaryDirectory(prefix="mmcv-build-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        src = Path(tmp) / f"mmcv-full-{VERSION}"
        _patch_std(src / "setup.py", std)
        facts: dict = {"op_set": "full"}
        if reduced:
            cut = op_set.reduce_sources(src)
            facts = {"op_set": "reduced", "compiled_ops": list(cut.compiled_ops),
                     "stubbed_ops": len(cut.stubbed_ops), "units": list(cut.units)}  # fmt: skip
            log.say(
                f"      reduced op set: {len(cut.units)} units ({', '.join(cut.units)}); "
                f"{len(cut.stubbed_ops)} ops raise OpNotCompiledError (`--full-ops` builds them)"
            )
        env = {"MAX_JOBS": jobs, "MMCV_WITH_OPS": "1", "FORCE_CUDA": "1" if cuda_ops else "0"}
        if not cuda_ops:
            env["CUDA_VISIBLE_DEVICES"] = ""  # setup.py builds CUDA ops whenever it sees a GPU
        out = Path(tmp) / "dist"
        log.run(
            [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", out, src],
            env=env,
            what="building mmcv-full",
        )
        (wheel,) = out.glob("mmcv_full-*.whl")
        seconds = time.monotonic() - started
        meta = {**info, "cuda_ops": cuda_ops, "cxx_std": std, "max_jobs": jobs, **facts,
                "build_seconds": round(seconds, 1)}  # fmt: skip
        store_wheel(wheel, dest, meta)
    record(kind, seconds, children_cpu() - cpu_before)
    return dest
