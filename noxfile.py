"""Sessions of streampetr-dali. `nox` runs lint + tests; see README.md for the rest.

Environments are built once and shared by the sessions that need them:
`.nox/_env/hermetic` (DALI, CPU torch, numpy: the loader, tooling and synthetic data) and the
OpenMMLab "upstream" env. Sessions themselves run with `venv_backend="none"`.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))
from overlaytool.cache import is_cached  # noqa: E402
from overlaytool.targets import load_targets  # noqa: E402

ENV_ROOT = ROOT / ".nox" / "_env"
PYTHONPATH = os.pathsep.join(str(ROOT / p) for p in ("scripts", "overlay"))

if os.environ.get("STREAMPETR_WHEELHOUSE"):  # offline: every env from that folder (docs/offline.md)
    from wheelhouse.offline import activate

    os.environ.update(activate(Path(os.environ["STREAMPETR_WHEELHOUSE"])))

nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "none"

HERMETIC_FILES = ("requirements/hermetic.txt", "constraints/hermetic.txt")


def hermetic_python(session: nox.Session) -> str:
    """The light env's python (`.nox/_env/hermetic`), (re)installed only when its pin files change."""
    env = ENV_ROOT / "hermetic"
    python = env / "bin" / "python"
    digest = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in HERMETIC_FILES)).hexdigest()
    stamp = env / ".requirements.sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return str(python)
    if not python.exists():
        session.run(sys.executable, "-m", "venv", str(env), external=True)
    requirements, constraints = HERMETIC_FILES
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    session.run(*pip, "-c", constraints, "-r", requirements, external=True)
    stamp.write_text(digest)
    return str(python)


def run_tool(session: nox.Session, python: str, module: str, *args: str) -> None:
    """Run `python -m module args` with the project's source roots on the path."""
    session.run(python, "-m", module, *args, external=True, env={"PYTHONPATH": PYTHONPATH})


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff (lint and format check) on everything we own, and the patch-series lint."""
    python = hermetic_python(session)
    session.run(python, "-m", "ruff", "check", ".", external=True)
    session.run(python, "-m", "ruff", "format", "--check", ".", external=True)
    run_tool(session, python, "overlaytool", "lint")


@nox.session
def tests(session: nox.Session) -> None:
    """The tests: hermetic and upstream tiers, and the stack tier when the upstream cache holds the pins."""
    session.run(hermetic_python(session), "-m", "pytest", "-m", "not stack", *session.posargs, external=True)
    missing = [t.pin.name for t in load_targets(ROOT) if not is_cached(t.pin)]
    if missing:
        session.log(f"stack tier skipped: the upstream cache lacks {', '.join(missing)} (`nox -s fetch`)")
        return
    codes = [0, 5] if session.posargs else [0]  # a path selection may hold no stack test
    python = upstream_python(session)
    session.run(python, "-m", "pytest", "-m", "stack", *session.posargs, external=True, success_codes=codes)


@nox.session
def tests_gpu(session: nox.Session) -> None:
    """The GPU tier (tests/gpu, `-m gpu`) inside the OpenMMLab env; without a GPU it skips with one line."""
    python = upstream_python(session)
    session.run(python, "-m", "pytest", "-m", "gpu", "tests/gpu", *session.posargs, external=True)


@nox.session
def fetch(session: nox.Session) -> None:
    """Fill the local upstream cache from the pinned URLs, or from a mirror (`-- --from <path-or-url>`)."""
    run_tool(session, sys.executable, "overlaytool", "fetch", *session.posargs)


@nox.session
def apply(session: nox.Session) -> None:
    """Apply the targets of patches/config.toml: pins, series, overlay (`-- --force` to discard edits)."""
    run_tool(session, sys.executable, "overlaytool", "apply", *session.posargs)


@nox.session
def refresh(session: nox.Session) -> None:
    """Export the changes in upstream/StreamPETR (work tree or commits) back to patches/, byte-stably."""
    run_tool(session, sys.executable, "overlaytool", "refresh", *session.posargs)


@nox.session
def edit(session: nox.Session) -> None:
    """Turn the applied series into commits on top of the pin, to edit with git before `refresh`."""
    run_tool(session, sys.executable, "overlaytool", "edit", *session.posargs)


@nox.session
def make_data(session: nox.Session) -> None:
    """Make the synthetic nuScenes-format data set, cached (`-- --help`: folder, size, seed)."""
    run_tool(session, hermetic_python(session), "synthdata", *session.posargs)


@nox.session
def rebase(session: nox.Session) -> None:
    """Move the series to a new upstream commit: `-- <commit|ref> [--from SRC]`, `--continue`, `--skip`,
    `--abort`; `-- --check <commit|ref> [--from SRC]` is a dry run that changes nothing."""
    run_tool(session, sys.executable, "overlaytool", "rebase", *session.posargs)


@nox.session
def inspect(session: nox.Session) -> None:
    """One DALI batch: a summary and a PNG of the augmented images with the projected boxes."""
    python = hermetic_python(session)
    run_tool(session, python, "dali_streampetr.inspect", *session.posargs)


UPSTREAM_PYTHON = ROOT / ".nox" / "_env" / "upstream" / "bin" / "python"


def upstream_python(session: nox.Session) -> str:
    """Apply the series to the pinned checkout and build (once) the shared OpenMMLab env."""
    run_tool(session, sys.executable, "overlaytool", "apply")
    run_tool(session, sys.executable, "upstream_env", "build")
    return str(UPSTREAM_PYTHON)


def data_root_args(session: nox.Session, python: str, args: list[str]) -> list[str]:
    """`args`, plus `--data-root <embedded synthetic data set>` when the user gave none (made once)."""
    if any(a == "--data-root" or a.startswith("--data-root=") for a in args):
        return args
    code = "from synthdata import ensure_dataset; print(ensure_dataset())"
    out = session.run(python, "-c", code, external=True, silent=True, env={"PYTHONPATH": PYTHONPATH})
    return [*args, "--data-root", str(out).strip().splitlines()[-1]]


@nox.session
def upstream_env(session: nox.Session) -> None:
    """Build the OpenMMLab env .nox/_env/upstream (`-- --cuda|--no-cuda`, kept; `--force`); rerun: no-op."""
    run_tool(session, sys.executable, "upstream_env", "build", *session.posargs)


@nox.session
def train_dali(session: nox.Session) -> None:
    """The main job: real StreamPETR training on the DALI loader (apply, env and data as needed)."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, sys.executable, "upstream_run", "train", "--loader", "dali", *args)


@nox.session
def train_torch(session: nox.Session) -> None:
    """The same run on the original PyTorch DataLoader (`train_dali`'s arguments, plus `--workers K`)."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, sys.executable, "upstream_run", "train", "--loader", "torch", *args)


@nox.session
def evaluate(session: nox.Session) -> None:
    """mAP/NDS of a checkpoint via tools/test.py: `-- [CKPT] [--data-root DIR] [--gpus K] [--config C]`."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, sys.executable, "upstream_run", "evaluate", *args)


@nox.session
def slurm_smoke(session: nox.Session) -> None:
    """Train (requeued, warned) and evaluate through srun --launcher slurm on a real SLURM (docs/slurm.md)."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, sys.executable, "upstream_run", "slurm_smoke", "--install", *args)


@nox.session
def create_data(session: nox.Session) -> None:
    """StreamPETR's info pickles: `-- --root DIR --version v1.0-mini|v1.0-trainval [--out DIR]`."""
    upstream_python(session)
    run_tool(session, sys.executable, "upstream_run", "create_data", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """DALI vs the original DataLoader, side by side: time, CPU and memory (docs/benchmark.md)."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, python, "loaderbench", *args)


@nox.session
def equivalence(session: nox.Session) -> None:
    """The DALI loader vs the original pipeline, field by field (docs/equivalence.md)."""
    python = upstream_python(session)
    args = data_root_args(session, python, list(session.posargs))
    run_tool(session, python, "equivalence", *args)


@nox.session
def wheelhouse(session: nox.Session) -> None:
    """Every wheel both envs install, hash-locked, + the GPU check kit: `-- [--out DIR] [--cuda 12|13]`."""
    run_tool(session, hermetic_python(session), "wheelhouse", *session.posargs)


@nox.session
def gpu_check(session: nox.Session) -> None:
    """The GPU check kit run here from its parts, index disabled (docs/gpu.md); its CPU half without a GPU."""
    run_tool(session, hermetic_python(session), "gpukit", *session.posargs)
