"""Build (or confirm) the upstream env: venv, torch, cached source wheels, requirements, checks."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from gpukit import CheckError, probe, sha256
from interpreter import install_command, venv_minor
from overlaytool import replace_file

from . import node_torch
from .claims import build_lock, wait_for_claims
from .cuda_toolkit import DEFAULT_ARCHES
from .errors import EnvBuildError
from .mmcv_wheel import BUILD_PREREQS, ensure_mmcv_wheel, install_wheel, want_cuda_ops
from .mmdet3d_wheel import ensure_mmdet3d_wheel
from .paths import CONSTRAINTS, ENV_DIR, LOG_FILE, MMDET3D_PIN, REQUIREMENTS, env_python
from .runlog import BuildLog

# {"digest": ..., **Choices, "cuda_ops", "cuda_ops_why", "mmcv_ext", "mmcv_ext_sha256"}: what the env
# was built from, with which choices, what auto resolved to, and the mmcv `_ext` library it installed
STAMP = ".upstream-env.json"
# The modules that decide what goes into the env: a change to one of them rebuilds the env. A new
# module that changes what is built belongs here; the console progress (runlog.py, timings.py),
# the CLI and the training runner beside them change nothing that is built and stay out.
BUILDER_MODULES = (
    "__init__.py",
    "build.py",
    "mmcv_wheel.py",
    "op_set.py",
    "cuda_toolkit.py",
    "mmdet3d_wheel.py",
    "setup_py.py",
    "node_torch.py",
    "paths.py",
    "_streampetr_numpy_compat.py",
)
# Installed without their dependency pins: mmdet3d rc6 pins numba==0.53.0 (no Python 3.11 wheels),
# networkx<2.3 and trimesh 2.35; lyft_dataset_sdk pins 2019-era pandas/matplotlib and test tools;
# nuscenes-devkit 1.2.0 caps numpy<2 (it runs on numpy 2: docs/upstream-env.md#numpy-2).
# mmdet3d is installed from the wheel file built from the pin, never from an index.
NO_DEPS = ("lyft_dataset_sdk", "nuscenes-devkit")
# what the modules a session runs beside a build may import (`--beside`: synthdata), installed
# before torch so that they run beside its install, which leaves a core idle
BESIDE_NEEDS = ("numpy", "pillow")
COMPAT_MODULE = Path(__file__).with_name("_streampetr_numpy_compat.py")
# the import check, in two processes at once: the training stack with the versions it prints and what
# upstream's tools import from it; then, on the other core, the rest of what the plugin and the devkits
# import and the torch-free leaves that mmdet's and mmdet3d's models import. Both leave the bytecode of
# what they import in the env (PYTHONDONTWRITEBYTECODE cleared for them), as pip's install compiles it:
# uv compiles none, and where PYTHONDONTWRITEBYTECODE is set (container images) every tool start would
# compile its ~5,900 modules from source (19.4 s of imports against 8.2 s: docs/upstream-env.md#bytecode)
IMPORT_CHECKS = (
    "import numpy as np, torch, torchvision, mmcv, mmcv.ops, mmdet, mmseg, mmdet3d, nvidia.dali as dali;"
    "import mmdet.apis, mmdet.datasets, mmdet3d.apis, mmdet3d.datasets, mmdet3d.models;"
    "assert np.int is int and np.in1d;"
    "print('torch', torch.__version__, '| torchvision', torchvision.__version__, '| mmcv-full', "
    "mmcv.__version__, '| mmdet', mmdet.__version__, '| mmseg', mmseg.__version__, '| mmdet3d', "
    "mmdet3d.__version__, '| numpy', np.__version__, '| dali', dali.__version__)",
    "import numba, nuscenes, lyft_dataset_sdk, einops, fvcore, IPython, sklearn.mixture, matplotlib.pyplot,"
    " trimesh; print('numba', numba.__version__)",
)
WRITE_BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}  # empty: unset, as Python reads it


@dataclass(frozen=True)
class Choices:
    """What a build was asked for; each persists in the stamp until a flag changes it."""

    cuda: bool | None = None  # --cuda / --no-cuda; None: auto (CUDA ops when the env's torch sees a
    # GPU; an env that has them keeps them on a host without one: they run the CPU ops too)
    full_ops: bool = False  # --full-ops / --reduced-ops
    arch_list: tuple[str, ...] = DEFAULT_ARCHES  # --cuda-arch (CUDA builds)
    toolkit: str = "auto"  # --toolkit: where nvcc comes from (not hashed: the same wheel either way)
    torch_from: str | None = None  # --torch-from: a python whose torch the env reuses


def resolve(stamp: dict | None, **requested: object) -> Choices:
    """The choices of a build: each flag given (not None) wins, else the one the env was built with
    (so `upstream_env -- --cuda` followed by `train_dali` keeps the CUDA ops), else the default."""
    recorded = stamp or {}
    values = {}
    for name, default in asdict(Choices()).items():
        given = requested.get(name)
        value = given if given is not None else recorded.get(name, default)
        values[name] = tuple(value) if name == "arch_list" and value is not None else value
    return Choices(**values)


def resolve_ops(python: Path, requested: bool | None, stamp: dict | None = None) -> tuple[bool, str]:
    """Whether the env gets mmcv's CUDA ops, and why: the flag given; else (auto) the CUDA ops of an env
    `stamp` says auto gave them (never downgraded: they serve a host without a GPU too, and a node that
    shares the env keeps them); else whether the env's torch sees a GPU now (asked through gpukit's
    `probe`: on a host with a GPU device file a torch that does not import raises its `CheckError`)."""
    if requested is not None:
        return requested, "--cuda" if requested else "--no-cuda"
    if stamp and stamp.get("cuda") is None and stamp.get("cuda_ops") is True:
        return True, "auto: kept the CUDA ops an auto build gave the env where torch saw a GPU"
    info = probe(python)
    build = f"CUDA {info['torch_cuda']} build" if info["torch_cuda"] else "CPU build"
    sees = "sees a GPU" if info["cuda_available"] else "sees no GPU"
    return want_cuda_ops(info, None), f"auto: torch {info['torch']} ({build}) {sees}"


def digest(choices: Choices, cuda_ops: bool) -> str:
    """What the env is a function of: the ops choices and what they resolved to (`cuda_ops`), the
    requirement files, the mmdet3d pin, the builder's code."""
    here = Path(__file__).parent
    parts = [REQUIREMENTS, CONSTRAINTS, MMDET3D_PIN, *(here / name for name in BUILDER_MODULES)]
    ops = "full" if choices.full_ops else "reduced"
    arches = ";".join(choices.arch_list) if cuda_ops else "-"
    key = f"cuda={choices.cuda}\ncuda_ops={cuda_ops}\nops={ops}\narch={arches}\n"
    key += f"torch_from={choices.torch_from}\n"
    key += f"python={'-' if choices.torch_from else _base_minor()}\n"  # the venv's base (the builder's own)
    h = hashlib.sha256(key.encode())
    for path in parts:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _base_minor() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def read_stamp(env: Path) -> dict | None:
    """The stamp of a built env, or None (never built, interrupted, or an older stamp format)."""
    try:
        stamp = json.loads((env / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_current(
    env: Path = ENV_DIR, cuda: bool | None = None, full_ops: bool | None = None, **flags: object
) -> bool:
    """The env exists, was built from the current inputs with the resolved choices (auto: CUDA ops it
    has, else what the env's torch decides now), and still holds the mmcv `_ext` library its build
    installed."""
    stamp = read_stamp(env)
    python = env_python(env)
    if not python.exists() or stamp is None:
        return False
    choices = resolve(stamp, cuda=cuda, full_ops=full_ops, **flags)
    try:
        cuda_ops, _ = resolve_ops(python, choices.cuda, stamp)
    except (EnvBuildError, CheckError):  # the env's torch does not import: rebuild it
        return False
    return stamp.get("digest") == digest(choices, cuda_ops) and _installed_ext_is_stamped(env, stamp)


def _installed_ext_is_stamped(env: Path, stamp: dict) -> bool:
    """The stamp's `mmcv_ext` (a path inside the env) has the sha256 the stamp recorded."""
    relative, recorded = stamp.get("mmcv_ext"), stamp.get("mmcv_ext_sha256")
    if not isinstance(relative, str) or not isinstance(recorded, str):
        return False
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        return False
    path = env / relative
    return path.is_file() and sha256(path) == recorded


def _write_stamp(env: Path, choices: Choices, cuda_ops: bool, why: str, ext: Path) -> None:
    """Record the build: its choices, what they resolved to and why, the installed `_ext` (`ext`,
    inside `env`) and its hash."""
    stamp = {
        "digest": digest(choices, cuda_ops),
        **asdict(choices),
        "cuda_ops": cuda_ops,
        "cuda_ops_why": why,
        "mmcv_ext": str(ext.relative_to(env)),
        "mmcv_ext_sha256": sha256(ext),
    }
    replace_file(env / STAMP, json.dumps(stamp) + "\n")
    (env / ".upstream-env.sha256").unlink(missing_ok=True)  # the stamp's previous format


def _purelib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Path(out.strip().splitlines()[-1])


def _install_compat(python: Path) -> None:
    """Copy the NumPy alias shim into site-packages with a `.pth` file that loads it."""
    site = _purelib(python)
    shutil.copy2(COMPAT_MODULE, site / COMPAT_MODULE.name)
    (site / "_streampetr_numpy_compat.pth").write_text(f"import {COMPAT_MODULE.stem}\n")


def build(
    env: Path = ENV_DIR,
    *,
    force: bool = False,
    clean: bool = False,
    mmcv_only: bool = False,
    beside: Sequence[str] = (),
    **flags: object,
) -> Path:
    """Make `env` match the requirement files; a no-op when its stamp is current. `flags`: the
    fields of `Choices` given on the command line (None: keep the recorded one, also across `clean`,
    which deletes the env first). Returns its python. A build that changes the env first waits for
    the jobs that run from it (`claims.py`), `force` and `clean` too.
    `mmcv_only`: only the venv, its build prerequisites and the cached mmcv-full wheel of these
    choices (`python -m upstream_env mmcv-wheel`: a node compiles it while the rest of its kit
    travels); the build with the same choices then reuses that wheel. Returns the wheel's folder.
    `beside`: modules a session runs in the env anyway (`python -m synthdata`: the data set), run by a
    build beside its steps from torch's install on (numpy and Pillow installed first: what they may
    import); one that fails is logged (the session runs it again and meets its error)."""
    python = env_python(env)
    stamp = read_stamp(env)
    choices = resolve(stamp, **flags)

    def up_to_date() -> bool:
        if force or clean or mmcv_only or not is_current(env, **asdict(choices)):
            return False
        stamp = read_stamp(env) or {}
        print(f"upstream env is up to date ({env}, mmcv ops: {_ops_name(choices, stamp)}).", file=sys.stderr)
        return True

    if up_to_date():
        return python
    what = "--clean" if clean else "--force" if force else "mmcv-wheel" if mmcv_only else "the build"
    with build_lock(env, f"upstream_env build ({what})"):  # one build at a time; no new claim meanwhile
        if up_to_date():  # a build that held the lock made it current
            return python
        wait_for_claims(env, f"{what} of the upstream env")  # never changed under a running job
        if clean and env.exists():
            shutil.rmtree(env)
        return _build(env, python, choices, stamp=stamp, mmcv_only=mmcv_only, beside=beside)


def _ops_name(choices: Choices, stamp: dict) -> str:
    cuda_ops = bool(stamp.get("cuda_ops"))
    kind = f"{'CUDA' if cuda_ops else 'CPU'} ({stamp.get('cuda_ops_why')})"
    ops = "full set" if choices.full_ops else "reduced set"
    arches = f", arches {';'.join(choices.arch_list)}" if cuda_ops else ""
    return f"{kind}, {ops}{arches}"


def _beside_the_compile(python: Path, log: BuildLog, constraints: Path, requirements: Path) -> Path:
    """What needs no mmcv-full, run while it compiles: the mmdet3d wheel (its folder returned), then
    ``requirements`` but mmcv-full (no package there needs it but through an extra), whose
    install after the compile then finds all else in place."""
    mmdet3d_dir = ensure_mmdet3d_wheel(python, log)
    lines = Path(requirements).read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory(prefix="upstream-requirements-") as tmp:
        rest = Path(tmp) / "requirements.txt"
        rest.write_text("".join(f"{line}\n" for line in lines if not re.match(r"\s*mmcv-full\b", line)))
        log.run(install_command(python, "-c", constraints, "-r", rest), what="install -r (but mmcv-full)")
    return mmdet3d_dir


def _run_modules(python: Path, log: BuildLog, modules: Sequence[str]) -> None:
    """``python -m`` each of ``modules``; one that fails is logged and the build goes on: the session
    runs it again and meets its error."""
    for module in modules:
        try:
            log.run([python, "-m", module], what=f"python -m {module}")
        except EnvBuildError as exc:
            log.say(f"      python -m {module} failed beside the build; the session runs it again: {exc}")


def _build(
    env: Path,
    python: Path,
    choices: Choices,
    *,
    stamp: dict | None = None,
    mmcv_only: bool = False,
    beside: Sequence[str] = (),
) -> Path:
    """The build steps; `stamp`: the env's before this build (auto keeps the CUDA ops it records)."""
    log = BuildLog(LOG_FILE, total_steps=3 if mmcv_only else 5)
    what = "the mmcv-full wheel of the upstream env" if mmcv_only else "the upstream env"
    log.say(f"building {what} at {env}; full output in {LOG_FILE}")
    total = time.monotonic()
    constraints, requirements = CONSTRAINTS, REQUIREMENTS
    if not mmcv_only:
        (env / STAMP).unlink(missing_ok=True)  # an env is what its stamp says: none while it changes
    # torch's install and the compile leave a core idle at times: the session's modules run from
    # before the first to the end of the build, and what needs no mmcv-full beside the compile
    pool = ThreadPoolExecutor(max_workers=2)
    modules = None
    try:
        # new, or made by another Python than the one it is built with now ($STREAMPETR_PYTHON)
        fresh = not python.exists() or (not choices.torch_from and venv_minor(env) != _base_minor())
        started = log.begin("virtual environment", "venv" if fresh else None)
        if fresh:
            base = choices.torch_from or sys.executable
            log.run([base, "-m", "venv", "--clear", env], what="python -m venv")
        log.done(started, timing="venv" if fresh else None)

        prereqs = BUILD_PREREQS
        started = log.begin("torch and the build prerequisites of mmcv-full", "torch" if fresh else None)
        if choices.torch_from:
            node = probe(Path(choices.torch_from), link_into=_purelib(python))
            constraints, requirements = node_torch.prepare(env, python, node, log)
            prereqs = tuple(p for p in BUILD_PREREQS if p not in node_torch.NODE_TORCH)
        if beside and not mmcv_only:
            log.run(install_command(python, "-c", constraints, *BESIDE_NEEDS), what="install (numpy, Pillow)")
            modules = pool.submit(_run_modules, python, log, beside)
            log.say(f"      beside the build from here: {', '.join(f'python -m {m}' for m in beside)}")
        log.run(install_command(python, "-c", constraints, *prereqs), what="install (torch)")
        log.done(started, timing="torch" if fresh else None)

        also = "" if mmcv_only else "; beside it the mmdet3d wheel, the requirements but mmcv-full"
        started = log.begin(f"mmcv-full wheel with compiled ops (cached){also}")
        same_torch = stamp is not None and stamp.get("torch_from") == choices.torch_from
        cuda_ops, why = resolve_ops(python, choices.cuda, stamp if same_torch else None)
        log.say(f"      mmcv ops: {'CUDA' if cuda_ops else 'CPU'} ({why})")
        rest = None if mmcv_only else pool.submit(_beside_the_compile, python, log, constraints, requirements)
        mmcv_dir = ensure_mmcv_wheel(
            python, log, cuda_ops, choices.full_ops, choices.arch_list, choices.toolkit
        )
        mmdet3d_dir = rest.result() if rest else None  # the step ends with what ran beside it
        log.done(started)
        if mmdet3d_dir is None:  # mmcv_only
            log.say(f"mmcv-full wheel ready in {time.monotonic() - total:.0f} s: {mmcv_dir}")
            return mmcv_dir

        started = log.begin("requirements/upstream.txt: mmcv-full now", "requirements" if fresh else None)
        links = ("--find-links", mmcv_dir, "--only-binary", "mmcv-full")
        log.run(install_command(python, "-c", constraints, *links, "-r", requirements), what="install -r")
        (mmdet3d,) = mmdet3d_dir.glob("mmdet3d-*.whl")
        no_deps = install_command(python, "--no-deps", "-c", constraints, *NO_DEPS, mmdet3d)
        log.run(no_deps, what="pip install --no-deps")
        # pip keeps an installed mmcv-full 1.6.0 of another build (CPU/CUDA ops, op set, arches):
        # this build's wheel file is installed over it, without its dependencies (also the node's
        # case, where mmcv-full's opencv-python stays out: node_torch.py says why)
        ext = install_wheel(python, _purelib(python), mmcv_dir, log)
        log.done(started, timing="requirements" if fresh else None)

        started = log.begin("NumPy alias shim and import check", "check")
        _install_compat(python)
        with ThreadPoolExecutor(max_workers=len(IMPORT_CHECKS)) as pool:
            checks = [
                pool.submit(log.run, [python, "-c", c], env=WRITE_BYTECODE, what="import check")
                for c in IMPORT_CHECKS
            ]
        for check in checks:
            check.result()  # raises the first failure
        log.done(started, timing="check")
        if modules is not None and not modules.done():
            log.say(f"      waiting for {', '.join(f'python -m {m}' for m in beside)}")
            modules.result()
    except (EnvBuildError, CheckError):
        log.say(f"upstream env build FAILED after {time.monotonic() - total:.0f} s; log: {LOG_FILE}")
        raise
    finally:
        pool.shutdown()
        log.close()
    _write_stamp(env, choices, cuda_ops, why, ext)
    print(f"upstream env ready in {time.monotonic() - total:.0f} s: {python}", file=sys.stderr)
    return python
