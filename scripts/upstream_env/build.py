"""Build (or confirm) the upstream env: venv, torch, cached source wheels, requirements, checks."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import EnvBuildError, node_torch
from .cuda_toolkit import DEFAULT_ARCHES
from .mmcv_wheel import ensure_mmcv_wheel, probe
from .mmdet3d_wheel import ensure_mmdet3d_wheel
from .paths import CONSTRAINTS, ENV_DIR, LOG_FILE, MMDET3D_PIN, REQUIREMENTS, env_python
from .runlog import BuildLog

# {"digest": ..., **Choices}: what the env was built from and with which choices
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
    "node_torch.py",
    "paths.py",
    "_streampetr_numpy_compat.py",
)
# What mmcv-full's setup.py imports at build time (it runs without build isolation).
BUILD_PREREQS = ("torch", "torchvision", "numpy", "setuptools", "wheel", "ninja")
# Installed without their dependency pins: mmdet3d rc6 pins numba==0.53.0 (no Python 3.11 wheels),
# networkx<2.3 and trimesh 2.35; lyft_dataset_sdk pins 2019-era pandas/matplotlib and test tools.
# mmdet3d is installed from the wheel file built from the pin, never from an index.
NO_DEPS = ("lyft_dataset_sdk",)
COMPAT_MODULE = Path(__file__).with_name("_streampetr_numpy_compat.py")
IMPORT_CHECK = (
    "import numpy as np, torch, torchvision, mmcv, mmcv.ops, mmdet, mmseg, mmdet3d, numba, nuscenes;"
    "import lyft_dataset_sdk, einops, fvcore, IPython, nvidia.dali as dali; assert np.bool is bool;"
    "print('torch', torch.__version__, '| torchvision', torchvision.__version__, '| mmcv-full', "
    "mmcv.__version__, '| mmdet', mmdet.__version__, '| mmseg', mmseg.__version__, '| mmdet3d', "
    "mmdet3d.__version__, '| numpy', np.__version__, '| numba', numba.__version__, "
    "'| dali', dali.__version__)"
)


@dataclass(frozen=True)
class Choices:
    """What a build was asked for; each persists in the stamp until a flag changes it."""

    cuda: bool | None = None  # --cuda / --no-cuda; None: auto (CUDA ops when torch sees a GPU)
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


def resolve_cuda(requested: bool | None, stamp: dict | None) -> bool | None:
    """The mmcv ops choice of a build (see `resolve`)."""
    return resolve(stamp, cuda=requested).cuda


def digest(choices: Choices | bool | None = None, full_ops: bool = False) -> str:
    """What the env is a function of: ops choices, requirement files, mmdet3d pin, the builder's code."""
    if not isinstance(choices, Choices):
        choices = Choices(cuda=choices, full_ops=full_ops)
    here = Path(__file__).parent
    parts = [REQUIREMENTS, CONSTRAINTS, MMDET3D_PIN, *(here / name for name in BUILDER_MODULES)]
    ops = "full" if choices.full_ops else "reduced"
    arches = ";".join(choices.arch_list) if choices.cuda is not False else "-"
    key = f"cuda={choices.cuda}\nops={ops}\narch={arches}\ntorch_from={choices.torch_from}\n"
    h = hashlib.sha256(key.encode())
    for path in parts:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


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
    """The env exists and was built from the current inputs with the resolved choices."""
    stamp = read_stamp(env)
    if not env_python(env).exists() or stamp is None:
        return False
    return stamp.get("digest") == digest(resolve(stamp, cuda=cuda, full_ops=full_ops, **flags))


def _write_stamp(env: Path, choices: Choices) -> None:
    stamp = {"digest": digest(choices), **asdict(choices)}
    (env / STAMP).write_text(json.dumps(stamp) + "\n")
    (env / ".upstream-env.sha256").unlink(missing_ok=True)  # the stamp's previous format


def _pip(python: Path, *args: object) -> list[object]:
    return [python, "-m", "pip", "install", "--disable-pip-version-check", *args]


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


def build(env: Path = ENV_DIR, *, force: bool = False, mmcv_only: bool = False, **flags: object) -> Path:
    """Make `env` match the requirement files; a no-op when its stamp is current. `flags`: the
    fields of `Choices` given on the command line (None: keep the recorded one). Returns its python.
    `mmcv_only`: only the venv, its build prerequisites and the cached mmcv-full wheel of these
    choices (`python -m upstream_env mmcv-wheel`: a node compiles it while the rest of its kit
    travels); the build with the same choices then reuses that wheel. Returns the wheel's folder."""
    python = env_python(env)
    choices = resolve(read_stamp(env), **flags)

    def up_to_date() -> bool:
        if force or mmcv_only or not is_current(env, **asdict(choices)):
            return False
        print(f"upstream env is up to date ({env}, mmcv ops: {_ops_name(choices)}).", file=sys.stderr)
        return True

    if up_to_date():
        return python
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; a waiting one then finds it current
        return python if up_to_date() else _build(env, python, choices, mmcv_only=mmcv_only)


def _ops_name(choices: Choices) -> str:
    kind = {True: "CUDA (--cuda)", False: "CPU (--no-cuda)", None: "auto"}[choices.cuda]
    ops = "full set" if choices.full_ops else "reduced set"
    arches = f", arches {';'.join(choices.arch_list)}" if choices.cuda is not False else ""
    return f"{kind}, {ops}{arches}"


def _build(env: Path, python: Path, choices: Choices, *, mmcv_only: bool = False) -> Path:
    log = BuildLog(LOG_FILE, total_steps=3 if mmcv_only else 6)
    what = "the mmcv-full wheel of the upstream env" if mmcv_only else "the upstream env"
    log.say(f"building {what} at {env}; full output in {LOG_FILE}")
    total = time.monotonic()
    constraints, requirements = CONSTRAINTS, REQUIREMENTS
    try:
        fresh = not python.exists()
        started = log.begin("virtual environment", "venv" if fresh else None)
        if fresh:
            log.run([choices.torch_from or sys.executable, "-m", "venv", env], what="python -m venv")
        log.done(started, timing="venv" if fresh else None)

        prereqs = BUILD_PREREQS
        started = log.begin("torch and the build prerequisites of mmcv-full", "torch" if fresh else None)
        if choices.torch_from:
            node = probe(Path(choices.torch_from))
            constraints, requirements = node_torch.prepare(env, python, node, _purelib(python), log)
            prereqs = tuple(p for p in BUILD_PREREQS if p not in node_torch.NODE_TORCH)
        log.run(_pip(python, "-c", constraints, *prereqs), what="pip install (torch)")
        log.done(started, timing="torch" if fresh else None)

        started = log.begin("mmcv-full wheel with compiled ops (cached)")
        mmcv_dir = ensure_mmcv_wheel(
            python, log, choices.cuda, choices.full_ops, choices.arch_list, choices.toolkit
        )
        log.done(started)
        if mmcv_only:
            log.say(f"mmcv-full wheel ready in {time.monotonic() - total:.0f} s: {mmcv_dir}")
            return mmcv_dir

        started = log.begin("mmdet3d wheel from the pinned source (cached)")
        mmdet3d_dir = ensure_mmdet3d_wheel(python, log)
        log.done(started)

        started = log.begin("requirements/upstream.txt", "requirements" if fresh else None)
        links = ("--find-links", mmcv_dir, "--only-binary", "mmcv-full")
        log.run(_pip(python, "-c", constraints, *links, "-r", requirements), what="pip install -r")
        (mmdet3d,) = mmdet3d_dir.glob("mmdet3d-*.whl")
        nodeps = [*NO_DEPS, mmdet3d]
        if choices.torch_from:  # mmcv-full without its opencv-python (node_torch.py says why)
            nodeps += list(mmcv_dir.glob("mmcv_full-*.whl"))
        log.run(_pip(python, "--no-deps", "-c", constraints, *nodeps), what="pip install --no-deps")
        log.done(started, timing="requirements" if fresh else None)

        started = log.begin("NumPy alias shim and import check", "check")
        _install_compat(python)
        log.run([python, "-c", IMPORT_CHECK], what="import check")
        log.done(started, timing="check")
    except EnvBuildError:
        log.say(f"upstream env build FAILED after {time.monotonic() - total:.0f} s; log: {LOG_FILE}")
        raise
    finally:
        log.close()
    _write_stamp(env, choices)
    print(f"upstream env ready in {time.monotonic() - total:.0f} s: {python}", file=sys.stderr)
    return python
