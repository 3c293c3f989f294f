"""Sessions of streampetr-dali. `nox` runs lint + tests; see README.md and docs/sessions.md (whose
tables follow the sections here, `# --- <section> ---`). The envs (`.nox/_env/hermetic`, the OpenMMLab
"upstream" env) are built once and shared; sessions run with `venv_backend="none"`.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))
from interpreter import BasePython, base_python, ensure_venv, other_pythons  # noqa: E402

nox.needs_version = ">=2026.10.20"  # requirements/nox.txt's pin (tests/test_noxfile.py)
nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "none"

ENV_ROOT = ROOT / ".nox" / "_env"
HERMETIC_FILES = ("requirements/hermetic.txt", "constraints/hermetic.txt", "requirements/hermetic-nodeps.txt")
# What `nox` runs on the host's other supported Pythons (the distribution's python3 too): the code
# that meets the interpreter and numpy (interpreter choice, upstream's setup.py and archives from an
# empty cache, shim, pickles, loader, data set), in the time CI has; `nox -s pythons` runs the whole
# hermetic tier on each (docs/tests.md#what-ci-runs)
OTHER_PYTHONS_TESTS = (
    "tests/interpreter",
    "tests/upstream_env/test_setup_py.py",
    "tests/upstream_env/test_setup_py_upstream.py",
    "tests/gpukit/test_parts.py::test_unpack_extracts_sources_and_refuses_members_out_of_the_destination",
    "tests/upstream_env/test__streampetr_numpy_compat.py",
    "tests/loader/frames",
    "tests/loader/test_checkpoint_numpy.py",
    "tests/loader/test_loader_synthetic.py",
    "tests/synthdata",
)
# a run of the tiers (no selection given) spreads its tests over the cores with pytest-xdist, a file a
# worker (its module's shared runs stay in one process), the heaviest files first (tests/tier_budget.py),
# one worker more than the cores (up to 4): a worker waiting on its launcher's ranks, a SLURM job or an
# install leaves its core to the others; a selection runs in one process
WORKERS = (
    "-n", str(min(len(os.sched_getaffinity(0)) + 1, 4)),
    "--dist", "loadfile", "--no-loadscope-reorder",
)  # fmt: skip
OTHER_PYTHONS_TIERS = "not stack and not gpu"  # hermetic, and upstream where the pins are cached
PYTHONPATH = os.pathsep.join(str(ROOT / p) for p in ("scripts", "overlay"))
Run = Callable[..., None]  # runs a command (and the exit codes that count as success), raising on another
Step = Callable[[Run], None]  # work `beside` a tier: its commands through the `run` it is given

# before any session downloads or compiles: a Python the stack supports, or a refusal (one line);
# $STREAMPETR_PYTHON, else this one, else one found (docs/upstream-env.md#pythons)
BASE = base_python(program="nox")
BASE_PYTHON = BASE.path

from overlaytool import missing_pins  # noqa: E402  (after the check: it needs Python 3.11)

if os.environ.get("STREAMPETR_WHEELHOUSE"):  # offline: every env from that folder (docs/offline.md)
    from wheelhouse import WheelhouseError, activate

    try:
        os.environ.update(activate(Path(os.environ["STREAMPETR_WHEELHOUSE"])))
    except WheelhouseError as exc:  # no session is running yet: one line, no traceback
        raise SystemExit(f"nox: {exc}") from None


# --- helpers -------------------------------------------------------------------------------------


def run_tool(session: nox.Session, python: str, module: str, *args: str, **kwargs: object) -> None:
    """Run `python -m module args` with the project's source roots on the path (`kwargs`: session.run's)."""
    session.run(python, "-m", module, *args, external=True, env={"PYTHONPATH": PYTHONPATH}, **kwargs)


def run_overlaytool(session: nox.Session, command: str) -> None:
    """`python -m overlaytool <command> <session arguments>` with nox's own python (stdlib and git)."""
    run_tool(session, BASE_PYTHON, "overlaytool", command, *session.posargs)


def refuse_args(session: nox.Session, *flags: str, why: str) -> None:
    """`session.error` when the session arguments hold one of `flags` (`--flag` or `--flag=...`)."""
    given = [a for a in session.posargs if a.split("=", 1)[0] in flags]
    if given:
        session.error(f"{session.name} does not take {' '.join(given)}: {why}")


def ensure_hermetic_env(session: nox.Session, base: BasePython | None = None, run: Run | None = None) -> str:
    """The light env's python (`.nox/_env/hermetic`; `hermetic-3.X.Y` for another Python `base`),
    (re)installed only when its pin files or its Python change; `run`: how its commands run."""
    base = base or BASE
    env = ENV_ROOT / ("hermetic" if base is BASE else f"hermetic-{'.'.join(map(str, base.version))}")
    inputs = [base.minor.encode(), base.path.encode(), *((ROOT / f).read_bytes() for f in HERMETIC_FILES)]
    digest = hashlib.sha256(b"".join(inputs)).hexdigest()
    requirements, constraints, without_deps = HERMETIC_FILES
    installs = [
        ("-q", "-c", constraints, "-r", requirements),
        ("-q", "-c", constraints, "--no-deps", "-r", without_deps),
    ]

    run = run or (lambda cmd: session.run(*cmd, external=True))
    # kept when made by the same Python minor, remade by another
    return str(
        ensure_venv(env, base.path, digest, installs, run, stamp=".requirements.sha256", minor=base.minor)
    )


@contextmanager
def upstream_env_claim(session: nox.Session, *build_args: str, apply: bool = True) -> Iterator[str]:
    """Apply the series (unless `apply` is false) and build the shared OpenMMLab env as needed, then hold
    a claim on it while the session runs from it: a build elsewhere (another node of a cluster) waits for
    the claim instead of changing the env under the session (docs/upstream-env.md#jobs-running-from-the-env).
    Yields the env's python."""
    from upstream_env import claim_env, env_python

    if apply:
        run_tool(session, BASE_PYTHON, "overlaytool", "apply")
    check = [BASE_PYTHON, "-m", "upstream_env", "path"]  # exit 0: current (as its builder's Python sees it)
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    for _ in range(3):  # a build elsewhere may change the env between this build and the claim
        run_tool(session, BASE_PYTHON, "upstream_env", "build", *build_args)
        with claim_env(session.name):
            if subprocess.run(check, env=env, capture_output=True).returncode:
                continue
            yield str(env_python())
            return
    session.error("other builds changed the OpenMMLab env three times between this build and its claim")


def data_root_given(args: Sequence[str]) -> bool:
    return any(a == "--data-root" or a.startswith("--data-root=") for a in args)


def with_data_root(session: nox.Session, python: str, args: Sequence[str]) -> list[str]:
    """`args`, plus `--data-root <embedded synthetic data set>` when the user gave none (made once)."""
    if data_root_given(args):
        return list(args)
    code = "from synthdata import ensure_dataset; print(ensure_dataset())"
    out = session.run(python, "-c", code, external=True, silent=True, env={"PYTHONPATH": PYTHONPATH})
    return [*args, "--data-root", str(out).strip().splitlines()[-1]]


def run_on_upstream_data(session: nox.Session, module: str, *fixed: str, in_env: bool = False) -> None:
    """Apply, build the OpenMMLab env, then `python -m module fixed.. <session arguments>` with
    `--data-root` defaulting to the synthetic data set. `in_env`: the module runs in the OpenMMLab
    env (it imports mmcv); otherwise nox's python runs it and it starts the env's python itself."""
    # without a --data-root, a build makes the synthetic data set from torch's install on (a core idles)
    beside = [] if data_root_given(session.posargs) else ["--beside", "synthdata"]
    with upstream_env_claim(session, *beside) as python:
        args = with_data_root(session, python, session.posargs)
        run_tool(session, python if in_env else BASE_PYTHON, module, *fixed, *args)


# --- the main job --------------------------------------------------------------------------------


@nox.session
def train_dali(session: nox.Session) -> None:
    """The main job: real StreamPETR training on the DALI loader (apply, env and data as needed)."""
    refuse_args(
        session, "--loader", why="it trains on the DALI loader; `nox -s train_torch` is the other one"
    )
    run_on_upstream_data(session, "upstream_run", "train", "--loader", "dali")


@nox.session
def train_torch(session: nox.Session) -> None:
    """The same run on the original PyTorch DataLoader (`train_dali`'s arguments, plus `--workers K`)."""
    refuse_args(
        session, "--loader", why="it trains on the PyTorch DataLoader; `nox -s train_dali` is the other one"
    )
    run_on_upstream_data(session, "upstream_run", "train", "--loader", "torch")


@nox.session
def evaluate(session: nox.Session) -> None:
    """mAP/NDS of a checkpoint via tools/test.py: `-- [CKPT] [--data-root DIR] [--gpus K] [--config C]`."""
    run_on_upstream_data(session, "upstream_run", "evaluate")


@nox.session
def slurm_smoke(session: nox.Session) -> None:
    """Train (requeued, warned) and evaluate through srun --launcher slurm on a real SLURM (docs/slurm.md)."""
    run_on_upstream_data(session, "upstream_run", "slurm_smoke", "--install")


# --- lint and tests (`nox`) ----------------------------------------------------------------------


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff (lint and format check) on everything we own, and the patch-series lint."""
    if session.posargs:
        session.error(f"lint takes no arguments (got {' '.join(session.posargs)})")
    python = ensure_hermetic_env(session)
    session.run(python, "-m", "ruff", "check", ".", external=True)
    session.run(python, "-m", "ruff", "format", "--check", ".", external=True)
    run_tool(session, python, "overlaytool", "lint")


@nox.session
def tests(session: nox.Session) -> None:
    """The tests: hermetic and upstream tiers, and the stack tier when the upstream cache holds the pins
    (its `proof` tests, the wider part of its proofs, run in `nox -s proofs`); a run with the SLURM
    tests first installs SLURM where it can. Under `CI=true` every tier runs."""
    refuse_args(
        session, "-m", why="it picks the tiers itself; run pytest directly to choose markers (docs/tests.md)"
    )
    if not session.posargs or any("slurm" in arg for arg in session.posargs):  # a run with tests/slurm
        # SLURM installed where it is missing and this host can (root, apt-get); where it cannot, one
        # line says why, the SLURM tests skip naming it, and a CI run fails on that skip
        run_tool(session, BASE_PYTHON, "slurm_local", "install", success_codes=[0, 1])
    missing = missing_pins(ROOT)
    if missing and os.environ.get("CI", "").strip().lower() in ("true", "1"):  # CI: every tier must run
        session.error(
            f"stack tier skipped: the upstream cache lacks {', '.join(missing)}; a CI run runs every tier: "
            "`nox -s fetch -- --from <mirror>` fills it"
        )
    # each pytest run records its wall and CPU seconds there (tests/tier_budget.py, docs/tests.md)
    timings = {"STREAMPETR_DALI_TIMINGS": str(ROOT / ".nox" / "_timings.json")}
    codes = [0, 5] if session.posargs else [0]  # a path selection may hold no test of a tier
    build = [] if missing else [command([BASE_PYTHON, "-m", "upstream_env", "build"])]
    with beside(session, "the OpenMMLab env's build", build):
        session.run(
            ensure_hermetic_env(session),
            "-m",
            "pytest",
            "-m",
            "not stack",
            *(session.posargs or WORKERS),
            external=True,
            env=timings,
        )
    # each other Python's env and set (the README's Pythons) beside the stack tier, one after another: its
    # workers leave a core idle at times (waiting on ranks, SLURM, a kill); one process each, torch at one
    # OpenMP thread as an xdist worker's beside another (without a stack tier: on the workers)
    selection = session.posargs or (*(WORKERS if missing else ()), *OTHER_PYTHONS_TESTS)

    def other_python_set(other: BasePython) -> Step:
        def step(run: Run) -> None:
            python = ensure_hermetic_env(session, other, run)
            run([python, "-m", "pytest", "-m", OTHER_PYTHONS_TIERS, *selection], codes)

        return step

    threads = {} if missing else {"OMP_NUM_THREADS": "1"}
    others = other_pythons(BASE)
    what = f"the envs and sets of Python {', '.join('.'.join(map(str, o.version)) for o in others)}"
    with beside(session, what, [other_python_set(o) for o in others], env={**timings, **threads}):
        if missing:
            session.log(
                f"stack tier skipped: the upstream cache lacks {', '.join(missing)} "
                "(`nox -s fetch`, or `nox -s fetch -- --from <mirror>`)"
            )
            return
        with upstream_env_claim(session) as python:
            pytest = [python, "-m", "pytest", "-m", "stack and not proof"]  # proofs: `nox -s proofs`
            pytest += session.posargs or WORKERS
            session.run(*pytest, external=True, success_codes=codes, env=timings)


def command(cmd: Sequence[str]) -> Step:
    """A step of `beside` that runs one command."""
    return lambda run: run(cmd)


@contextmanager
def beside(
    session: nox.Session, what: str, steps: Sequence[Step], env: dict[str, str] | None = None
) -> Iterator[None]:
    """Run `steps` (`what` they do) one after another in the background while the block runs a tier
    whose workers leave cores idle; their output is shown when the block ends. A failing block stops
    the command running and starts no other; a failing step ends the steps and fails the session."""
    if not steps:
        yield
        return
    stop, lock = threading.Event(), threading.Lock()  # lock: no command starts while the block stops them
    current: subprocess.Popen | None = None  # the command running beside
    output = tempfile.TemporaryFile("w+")  # noqa: SIM115 - read and closed after the block
    failed: list[str] = []
    full_env = {**os.environ, "PYTHONPATH": PYTHONPATH, **(env or {})}

    def note(line: str) -> None:  # at the end the commands' lines left
        output.seek(0, os.SEEK_END)
        output.write(line + "\n")
        output.flush()

    def run(cmd: Sequence[str], codes: Sequence[int] = (0,)) -> None:
        nonlocal current
        with lock:
            if stop.is_set():
                raise subprocess.CalledProcessError(-signal.SIGTERM, cmd)
            note(f"$ {' '.join(map(str, cmd))}")  # before the command's own lines, in the same file
            process = current = subprocess.Popen(
                cmd, env=full_env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )
        code = process.wait()
        note(f"exit {code}")
        if code not in codes:
            raise subprocess.CalledProcessError(code, cmd)

    def run_all() -> None:
        for step in steps:
            try:
                step(run)
            except subprocess.CalledProcessError as exc:
                failed.append(f"{' '.join(map(str, exc.cmd))} (exit {exc.returncode})")
                return
            except Exception as exc:  # noqa: BLE001 - any other failure of a step fails the session too
                failed.append(repr(exc))
                return

    session.log(f"beside the tier below: {what}")
    worker = threading.Thread(target=run_all)
    worker.start()
    try:
        yield
    except BaseException:  # a failed tier or ^C: the command running beside stops, no other starts
        with lock:
            stop.set()
            if current is not None:
                with suppress(ProcessLookupError):  # it has ended
                    os.killpg(current.pid, signal.SIGTERM)
        raise
    finally:
        worker.join()
        output.seek(0)
        for line in output.read().splitlines():
            session.log(f"  (beside) {line}")
        output.close()
    if failed:
        session.error(f"beside the tiers, failed: {failed[0]}")


@nox.session
def tests_gpu(session: nox.Session) -> None:
    """The GPU tier (tests/gpu, `-m gpu`) inside the OpenMMLab env; where its torch or DALI sees no CUDA
    device, each test skips with one line."""
    refuse_args(session, "-m", why="it runs the gpu marker")
    with upstream_env_claim(session) as python:
        session.run(python, "-m", "pytest", "-m", "gpu", "tests/gpu", *session.posargs, external=True)


@nox.session
def proofs(session: nox.Session) -> None:
    """The wider part of the stack proofs that `nox` runs focused (the `proof` marker): scene shards at 2
    and 4 ranks, on upstream's DataLoader and with `--validate`; the sharded 2-process resume."""
    refuse_args(session, "-m", why="it runs the proof marker")
    codes = [0, 5] if session.posargs else [0]  # a path selection may hold no proof
    timings = {"STREAMPETR_DALI_TIMINGS": str(ROOT / ".nox" / "_timings.json")}
    with upstream_env_claim(session) as python:
        pytest = [python, "-m", "pytest", "-m", "stack and proof"]  # one process: 4-rank runs, the kit in RAM
        session.run(*pytest, *session.posargs, external=True, success_codes=codes, env=timings)


@nox.session
def pythons(session: nox.Session) -> None:
    """Each supported CPython this host has: a fresh clone trains cold with it and runs its hermetic tier
    (`-- --minors 3.12,3.13`, `--no-tests`); not in `nox`: about 10 min per Python on 2 cores."""
    # nox's own python runs the driver; each clone runs nox with that Python (a venv of it is python3)
    run_tool(session, sys.executable, "python_matrix", *session.posargs)


@nox.session
def gpu_check(session: nox.Session) -> None:
    """The GPU check kit run here from its parts, index disabled (docs/gpu.md); its CPU half without a GPU."""
    run_tool(session, ensure_hermetic_env(session), "gpu_kits.gpu_check", *session.posargs)


@nox.session
def node_rehearsal(session: nox.Session) -> None:
    """The lent GPU node's run rehearsed here with its software (CPython 3.12, torch 2.11.0+cu130, nvcc
    13.0): the stack kit made and run call by call offline, mmcv's CUDA ops for sm_90 compiled, then the
    CPU halves; a step table and the device budget (docs/gpu.md). Not in `nox`: 6-8.5 min on 2 cores."""
    run_tool(session, ensure_hermetic_env(session), "node_rehearsal", *session.posargs)


# --- the upstream pins and the patch series ------------------------------------------------------


@nox.session
def fetch(session: nox.Session) -> None:
    """Fill the local upstream cache from the pinned URLs, or from a mirror (`-- --from <path-or-url>`)."""
    run_overlaytool(session, "fetch")


@nox.session
def apply(session: nox.Session) -> None:
    """Apply the targets of patches/config.toml: pins, series, overlay (`-- --force` to discard edits)."""
    run_overlaytool(session, "apply")


@nox.session
def refresh(session: nox.Session) -> None:
    """Export the changes in upstream/StreamPETR (work tree or commits) back to patches/, byte-stably."""
    run_overlaytool(session, "refresh")


@nox.session
def edit(session: nox.Session) -> None:
    """Turn the applied series into commits on top of the pin, to edit with git before `refresh`."""
    run_overlaytool(session, "edit")


@nox.session
def rebase(session: nox.Session) -> None:
    """Move the series to a new upstream commit: `-- <commit|ref> [--from SRC]`, `--continue`, `--skip`,
    `--abort`; `-- --check <commit|ref> [--from SRC]` is a dry run that changes nothing, and with
    `--train` it then vets the commit in a throw-away copy (rebase, apply, configs, one DALI iteration)."""
    if "--train" not in session.posargs:
        run_overlaytool(session, "rebase")
        return
    args = [a for a in session.posargs if a != "--train"]
    if "--check" not in args:
        session.error("--train vets a candidate without changing anything: give it with --check <commit>")
    refuse_args(session, "--target", why="--train vets the StreamPETR series (the first target)")
    run_tool(session, BASE_PYTHON, "overlaytool", "rebase", *args)  # the dry run first: it must carry over
    vet = [a for a in args if a != "--check"]
    with upstream_env_claim(session, apply=False) as python:
        vet = [*with_data_root(session, python, vet), "--python", python]
        run_tool(session, BASE_PYTHON, "forkwatch", "vet", *vet)


@nox.session
def watch(session: nox.Session) -> None:
    """`rebase --check` (with `-- --train` also the vetting) against upstream's head and every fork of
    upstream/forks.toml: one summary; non-zero only when the state changed (`-- --sources F --out D`)."""
    args = list(session.posargs)
    if "--train" not in args:
        run_tool(session, BASE_PYTHON, "forkwatch", "watch", *args)
        return
    with upstream_env_claim(session, apply=False) as python:
        args = [*with_data_root(session, python, args), "--python", python]
        run_tool(session, BASE_PYTHON, "forkwatch", "watch", *args)


# --- environments and offline installs -----------------------------------------------------------


@nox.session
def upstream_env(session: nox.Session) -> None:
    """Build the OpenMMLab env .nox/_env/upstream (`-- --cuda|--no-cuda`, kept; `--force`); rerun: no-op."""
    run_tool(session, BASE_PYTHON, "upstream_env", "build", *session.posargs)


@nox.session
def cuda_build(session: nox.Session) -> None:
    """Build the OpenMMLab env with mmcv's CUDA ops (nvcc from the index where the host has none) and
    check them: a cubin per arch, linked CUDA runtime, `import mmcv.ops`; on a GPU, the ops run.
    Arguments go to the build (`-- --toolkit index --cuda-arch 9.0`). Not in `nox`: ~5 min here."""
    with upstream_env_claim(session, "--cuda", *session.posargs) as python:
        run_tool(session, python, "upstream_env.cuda_check")


@nox.session
def wheelhouse(session: nox.Session) -> None:
    """Every wheel both envs install, hash-locked, for offline installs: `-- [--out DIR] [--only PARTS]`."""
    run_tool(session, ensure_hermetic_env(session), "wheelhouse", *session.posargs)


@nox.session
def gpu_kits(session: nox.Session) -> None:
    """The GPU check kit, out/wheelhouse/gpu-kit (`-- --cuda 12|13`); `-- --only stack-kit`: the stack kit."""
    run_tool(session, ensure_hermetic_env(session), "gpu_kits", *session.posargs)


# --- data ----------------------------------------------------------------------------------------


@nox.session
def make_data(session: nox.Session) -> None:
    """Make the synthetic nuScenes-format data set, cached (`-- --help`: folder, size, seed)."""
    run_tool(session, ensure_hermetic_env(session), "synthdata", *session.posargs)


@nox.session
def create_data(session: nox.Session) -> None:
    """StreamPETR's info pickles: `-- --root DIR --version v1.0-mini|v1.0-trainval [--out DIR]`."""
    with upstream_env_claim(session):
        run_tool(session, BASE_PYTHON, "upstream_run", "create_data", *session.posargs)


# --- the loader against the original -------------------------------------------------------------


@nox.session
def inspect(session: nox.Session) -> None:
    """One DALI batch: a summary and a PNG of the augmented images with the projected boxes."""
    run_tool(session, ensure_hermetic_env(session), "batchview", *session.posargs)


@nox.session
def equivalence(session: nox.Session) -> None:
    """The DALI loader vs the original pipeline, field by field (docs/equivalence.md)."""
    run_on_upstream_data(session, "equivalence", in_env=True)


@nox.session
def bench(session: nox.Session) -> None:
    """DALI vs the original DataLoader, side by side: time, CPU and memory (docs/benchmark.md)."""
    run_on_upstream_data(session, "loaderbench", in_env=True)
