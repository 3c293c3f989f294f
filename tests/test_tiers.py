"""The tier rules of tests/conftest.py and tests/tiers.py: each file named for its tier, the GPU
tier decided by what torch and DALI see, and a CI run (``CI=true``) failing on any skip but the GPU
tier's "no CUDA device"."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tier_budget import TIMINGS_ENV
from tiers import (
    NO_CUDA_DEVICE,
    accepted_under_ci,
    cuda_devices,
    gpu_skip_reason,
    is_ci,
    misnamed_test_files,
)

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent


def test_every_test_file_is_named_for_the_highest_tier_it_is_marked_with() -> None:
    assert misnamed_test_files(TESTS) == []


def test_a_name_that_disagrees_with_the_markers_is_named(tmp_path: Path) -> None:
    files = {
        "test_plain.py": "import pytest\npytestmark = pytest.mark.stack\n",
        "test_quiet_stack.py": "def test_x():\n    pass\n",
        "test_stack_prefix.py": "def test_x():\n    pass\n",
        "test_pins_upstream.py": "import pytest\n@pytest.mark.upstream\ndef test_x(): 0\n",
        "test_loader_gpu.py": "import pytest\npytestmark = pytest.mark.gpu\n"
        "@pytest.mark.stack\ndef test_x(): 0\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert misnamed_test_files(tmp_path) == [
        "test_plain.py: named hermetic, marked stack",
        "test_quiet_stack.py: named stack, marked hermetic",
        "test_stack_prefix.py: named None, marked hermetic",
    ]


def test_this_interpreters_torch_and_dali_decide_the_gpu_tier() -> None:
    """The real probe: on a host without a CUDA device (this CPU host) the tier skips as
    "no CUDA device", the one skip CI accepts; where torch and DALI see one, it runs."""
    import torch

    version, cuda_build, torch_devices, dali_devices = cuda_devices()
    assert version == torch.__version__ and (torch_devices > 0) == torch.cuda.is_available()
    reason = gpu_skip_reason(version, cuda_build, torch_devices, dali_devices)
    if torch_devices == 0:
        assert reason.startswith(NO_CUDA_DEVICE) and accepted_under_ci("gpu", reason)
    else:
        assert (reason is None) == (dali_devices > 0)


@pytest.mark.parametrize(
    ("inputs", "runs", "accepted", "says"),
    [
        (("2.13.0+cu128", True, 1, 1), True, None, None),
        (("2.13.0+cu128", True, 8, 8), True, None, None),
        (("2.13.0+cu128", True, 0, 0), False, True, "sees none"),
        (("2.13.0+cpu", False, 0, 1), False, True, "a CPU build"),
        (("2.13.0+cu128", True, 2, 0), False, False, "DALI sees none"),
    ],
)
def test_the_gpu_tier_runs_only_where_torch_and_dali_both_see_a_device(inputs, runs, accepted, says) -> None:
    reason = gpu_skip_reason(*inputs)
    assert (reason is None) == runs
    if not runs:
        assert says in reason and accepted_under_ci("gpu", reason) == accepted


def test_ci_accepts_only_the_gpu_tiers_no_cuda_device() -> None:
    assert is_ci({"CI": "true"}) and is_ci({"CI": "1"}) and is_ci({"CI": "TRUE"})
    assert not is_ci({}) and not is_ci({"CI": "false"}) and not is_ci({"CI": ""})
    no_device = gpu_skip_reason("2.13.0+cpu", False, 0, 0)
    assert accepted_under_ci("gpu", no_device)
    assert not accepted_under_ci("hermetic", no_device)  # the words alone are not enough
    assert not accepted_under_ci("stack", "slurm smoke skipped: not installed: srun")
    assert not accepted_under_ci("upstream", "upstream tier skipped: the local upstream cache lacks x")


SKIPS = {
    "installable": 'import pytest\n\n@pytest.mark.skip(reason="needs a tool a project step installs")\n'
    "def test_installable():\n    pass\n",
    "gpu": "import pytest\n\n@pytest.mark.gpu\ndef test_on_the_gpu():\n    pass\n",
    "threads": "import os, pathlib\n\ndef test_threads():\n"
    "    pathlib.Path('threads.txt').write_text(os.environ.get('OMP_NUM_THREADS', 'unset'))\n",
}


def scratch_env() -> dict[str, str]:
    """The environment of a scratch pytest run: it records no timings into the real run's file, and sets
    its workers' threads itself (not this run's worker's)."""
    return {k: v for k, v in os.environ.items() if k not in (TIMINGS_ENV, "OMP_NUM_THREADS")}


def run_pytest(tmp_path: Path, ci: str | None, case: str, *args: str) -> subprocess.CompletedProcess:
    """pytest with this conftest as a plugin on the test file ``SKIPS[case]``."""
    (tmp_path / "test_skips.py").write_text(SKIPS[case])
    env = {k: v for k, v in scratch_env().items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(str(REPO_ROOT / p) for p in ("tests", "scripts", "overlay"))
    if ci is not None:
        env["CI"] = ci
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(REPO_ROOT / "pyproject.toml"),
        "--rootdir",
        str(tmp_path),
    ]
    cmd += ["-p", "conftest", "-p", "no:cacheprovider", "-q", *args, "test_skips.py"]
    return subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_a_ci_run_fails_on_a_skip_it_does_not_accept_and_lists_every_skip(tmp_path: Path) -> None:
    refused = run_pytest(tmp_path, "true", "installable")
    assert refused.returncode == 1, refused.stdout
    assert "skipped 1: needs a tool a project step installs [not accepted under CI=true]" in refused.stdout
    assert "    test_skips.py::test_installable" in refused.stdout
    assert "CI=true: 1 skip(s) not accepted" in refused.stdout

    outside_ci = run_pytest(tmp_path, None, "installable")
    assert outside_ci.returncode == 0, outside_ci.stdout
    assert "skipped 1: needs a tool a project step installs\n" in outside_ci.stdout


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_ci_run_accepts_the_gpu_tier_without_a_device(tmp_path: Path, workers: tuple[str, ...]) -> None:
    """Also with pytest-xdist's workers (`nox` runs the tiers so): the summary and the CI rule run in the
    controller, which learns each test's tier from its reports."""
    done = run_pytest(tmp_path, "true", "gpu", *workers)  # skipped here (no device), or runs on a GPU host
    assert done.returncode == 0, done.stdout
    assert "not accepted" not in done.stdout
    assert re.search(r"^gpu +ran (0 .*skipped 1|1 .*skipped 0)$", done.stdout, re.M), done.stdout


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_each_xdist_worker_gets_its_share_of_the_cores_for_openmp(
    tmp_path: Path, workers: tuple[str, ...]
) -> None:
    """Two workers' 2-thread trainings on 2 cores spin-wait: each worker's runs get cores // workers
    OpenMP threads, as torchrun's ranks do; one process keeps torch's default (every core)."""
    done = run_pytest(tmp_path, None, "threads", *workers)
    assert done.returncode == 0, done.stdout
    cores = len(os.sched_getaffinity(0))
    assert (tmp_path / "threads.txt").read_text() == (str(max(1, cores // 2)) if workers else "unset")


def test_a_stack_selection_collects_only_the_stack_files() -> None:
    """`nox -s tests` (`stack and not proof`) and `nox -s proofs` (`stack and proof`) import only the
    `_stack.py` files in the OpenMMLab env, which lacks the hermetic tier's test-only packages, as
    `-m stack` does; an expression that can select other tests collects every file."""

    def collected(expr: str) -> int:
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", expr]
        proc = subprocess.run(
            [*cmd, "tests/upstream"], cwd=REPO_ROOT, env=scratch_env(), capture_output=True, text=True
        )
        found = re.search(r"(?:\d+/)?(\d+) tests? collected", proc.stdout)
        assert proc.returncode in (0, 5) and found, proc.stdout[-3000:] + proc.stderr[-3000:]
        return int(found.group(1))

    counts = {
        expr: collected(expr) for expr in ("stack", "stack and not proof", "stack and proof", "stack or gpu")
    }
    assert (
        counts["stack"] == counts["stack and not proof"] == counts["stack and proof"] < counts["stack or gpu"]
    ), counts
