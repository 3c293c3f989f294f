"""Build (or confirm) the upstream env: venv, torch, cached source wheels, requirements, checks."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import EnvBuildError
from .mmcv_wheel import ensure_mmcv_wheel
from .mmdet3d_wheel import ensure_mmdet3d_wheel
from .paths import CONSTRAINTS, ENV_DIR, LOG_FILE, MMDET3D_PIN, REQUIREMENTS, env_python
from .runlog import BuildLog

# {"digest": ..., "cuda": true | false | null, "full_ops": bool}: what the env was built from
STAMP = ".upstream-env.json"
# The modules that decide what goes into the env: a change to one of them rebuilds the env. A new
# module that changes what is built belongs here; the console progress (runlog.py, timings.py),
# the CLI and the training runner beside them change nothing that is built and stay out.
BUILDER_MODULES = (
    "__init__.py",
    "build.py",
    "mmcv_wheel.py",
    "op_set.py",
    "mmdet3d_wheel.py",
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


def digest(cuda: bool | None, full_ops: bool = False) -> str:
    """What the env is a function of: ops choice, requirement files, mmdet3d pin, the builder's code."""
    here = Path(__file__).parent
    parts = [REQUIREMENTS, CONSTRAINTS, MMDET3D_PIN, *(here / name for name in BUILDER_MODULES)]
    ops = "full" if full_ops or cuda else "reduced-unless-cuda"  # CUDA-ops builds are always full
    h = hashlib.sha256(f"cuda={cuda}\nops={ops}\n".encode())
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


def resolve_cuda(requested: bool | None, stamp: dict | None) -> bool | None:
    """The mmcv ops choice of a build: `--cuda`/`--no-cuda` when given, else the one the env was built
    with (so `upstream_env -- --cuda` followed by `train_dali` keeps the CUDA ops), else None (auto:
    CUDA ops when a GPU and nvcc are both present)."""
    if requested is not None or stamp is None:
        return requested
    return stamp.get("cuda")


def resolve_full_ops(requested: bool | None, stamp: dict | None) -> bool:
    """`--full-ops`/`--reduced-ops` when given, else the choice the env was built with, else reduced."""
    if requested is not None:
        return requested
    return bool((stamp or {}).get("full_ops", False))


def is_current(env: Path = ENV_DIR, cuda: bool | None = None, full_ops: bool | None = None) -> bool:
    """The env exists and was built from the current inputs with the resolved ops choice."""
    stamp = read_stamp(env)
    if not env_python(env).exists() or stamp is None:
        return False
    return stamp.get("digest") == digest(resolve_cuda(cuda, stamp), resolve_full_ops(full_ops, stamp))


def _write_stamp(env: Path, cuda: bool | None, full_ops: bool = False) -> None:
    stamp = {"digest": digest(cuda, full_ops), "cuda": cuda, "full_ops": full_ops}
    (env / STAMP).write_text(json.dumps(stamp) + "\n")
    (env / ".upstream-env.sha256").unlink(missing_ok=True)  # the stamp's previous format


def _pip(python: Path, *args: object) -> list[object]:
    return [python, "-m", "pip", "install", "--disable-pip-version-check", *args]


def _install_compat(python: Path) -> None:
    """Copy the NumPy alias shim into site-packages with a `.pth` file that loads it."""
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    site = Path(purelib)
    shutil.copy2(COMPAT_MODULE, site / COMPAT_MODULE.name)
    (site / "_streampetr_numpy_compat.pth").write_text(f"import {COMPAT_MODULE.stem}\n")


def build(
    env: Path = ENV_DIR, *, cuda: bool | None = None, full_ops: bool | None = None, force: bool = False
) -> Path:
    """Make `env` match the requirement files; a no-op when its stamp is current. Returns its python."""
    python = env_python(env)
    stamp = read_stamp(env)
    cuda, full = resolve_cuda(cuda, stamp), resolve_full_ops(full_ops, stamp)
    up_to_date = f"upstream env is up to date ({env}, mmcv ops: {_ops_name(cuda, full)})."
    if not force and is_current(env, cuda, full):
        print(up_to_date, file=sys.stderr)
        return python
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; a waiting one then finds it current
        if not force and is_current(env, cuda, full):
            print(up_to_date, file=sys.stderr)
            return python
        return _build(env, python, cuda, full)


def _ops_name(cuda: bool | None, full_ops: bool = False) -> str:
    kind = {True: "CUDA (--cuda)", False: "CPU (--no-cuda)", None: "auto"}[cuda]
    return kind + ("" if cuda else (", full set" if full_ops else ", reduced set on CPU"))


def _build(env: Path, python: Path, cuda: bool | None, full_ops: bool = False) -> Path:
    log = BuildLog(LOG_FILE, total_steps=6)
    log.say(f"building the upstream env at {env}; full output in {LOG_FILE}")
    total = time.monotonic()
    try:
        fresh = not python.exists()
        started = log.begin("virtual environment", "venv" if fresh else None)
        if fresh:
            log.run([sys.executable, "-m", "venv", env], what="python -m venv")
        log.done(started, timing="venv" if fresh else None)

        started = log.begin("torch and the build prerequisites of mmcv-full", "torch" if fresh else None)
        log.run(_pip(python, "-c", CONSTRAINTS, *BUILD_PREREQS), what="pip install (torch)")
        log.done(started, timing="torch" if fresh else None)

        started = log.begin("mmcv-full wheel with compiled ops (cached)")
        mmcv_dir = ensure_mmcv_wheel(python, log, cuda, full_ops)
        log.done(started)

        started = log.begin("mmdet3d wheel from the pinned source (cached)")
        mmdet3d_dir = ensure_mmdet3d_wheel(python, log)
        log.done(started)

        started = log.begin("requirements/upstream.txt", "requirements" if fresh else None)
        links = ("--find-links", mmcv_dir, "--only-binary", "mmcv-full")
        log.run(_pip(python, "-c", CONSTRAINTS, *links, "-r", REQUIREMENTS), what="pip install -r")
        (mmdet3d,) = mmdet3d_dir.glob("mmdet3d-*.whl")
        log.run(_pip(python, "--no-deps", "-c", CONSTRAINTS, *NO_DEPS, mmdet3d), what="pip install --no-deps")
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
    _write_stamp(env, cuda, full_ops)
    print(f"upstream env ready in {time.monotonic() - total:.0f} s: {python}", file=sys.stderr)
    return python
