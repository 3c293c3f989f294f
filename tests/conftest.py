"""Test tiers: hermetic (always), upstream (pins in the local cache), stack (OpenMMLab env), gpu.

Tests of a tier whose prerequisites are missing are skipped with one line saying how to enable
the tier; the end of the run prints which tiers ran and every skip with its reason. Under
``CI=true`` a skip fails the run unless it is the GPU tier's "no CUDA device" (``tiers.py``).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from overlaytool import missing_pins
from tier_budget import BUDGET_FILE, TIMINGS_ENV, StackBudget, read_budget
from tiers import TIERS, accepted_under_ci, cuda_devices, gpu_skip_reason, highest_tier, is_ci
from upstream_env import env_python

REPO_ROOT = Path(__file__).resolve().parents[1]


def _upstream_missing() -> str | None:
    missing = missing_pins(REPO_ROOT)
    if missing:
        return (
            f"upstream tier skipped: the local upstream cache lacks {', '.join(missing)}; "
            "enable it with `nox -s fetch` (or `nox -s fetch -- --from <mirror-or-clone>`)"
        )
    return None


def _stack_missing() -> str | None:
    if importlib.util.find_spec("mmcv") is None:
        if not env_python().exists():
            return "stack tier skipped: no OpenMMLab env; `nox -s tests` builds it when the pins are cached"
        return "stack tier skipped in this interpreter: it runs inside the OpenMMLab env (`nox -s tests`)"
    if not (REPO_ROOT / "upstream" / "StreamPETR" / ".git").exists():
        return "stack tier skipped: upstream/StreamPETR is not applied; run `nox -s apply`"
    return None


def pytest_configure(config: pytest.Config) -> None:
    """The stack tier's budget (``tier_budget.py``): every test measured, a budgeted stack test over
    its budget fails the run; ``$STREAMPETR_DALI_TIMINGS`` (set by ``nox -s tests``) records the run.
    In a pytest-xdist worker: ``OMP_NUM_THREADS`` (unless set) at the worker's share of the cores."""
    timings = os.environ.get(TIMINGS_ENV)
    plugin = StackBudget(read_budget(BUDGET_FILE), Path(timings) if timings else None)
    config.pluginmanager.register(plugin, "stack-budget")
    workers = getattr(config, "workerinput", {}).get("workercount")
    if workers:  # a pytest-xdist worker: torch's OpenMP threads in it and its runs share the cores
        os.environ.setdefault("OMP_NUM_THREADS", str(worker_threads(workers)))


def worker_threads(workers: int) -> int:
    """OpenMP threads per xdist worker, as torchrun gives its ranks: its share of the cores. Two 2-thread
    trainings on 2 cores spin-wait (82 CPU-s each for 2 iterations; 53 at one thread each)."""
    return max(1, len(os.sched_getaffinity(0)) // workers)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A stack run (`-m stack`, or `stack and ...` as `nox -s tests` and `nox -s proofs` select, in the
    OpenMMLab env) collects only the stack files, `test_*_stack.py` (`tests/test_tiers.py` holds every
    file to that rule): that env lacks the hermetic tier's test-only packages (hypothesis), so
    importing another test file there could fail."""
    name = collection_path.name
    if _stack_only(config.getoption("markexpr")) and name.startswith("test_") and name.endswith(".py"):
        return not name.endswith("_stack.py") or None
    return None


def _stack_only(expr: str) -> bool:
    """Whether the mark expression selects stack tests only: `stack`, or `stack and <more>`."""
    return expr == "stack" or (expr.startswith("stack and ") and " or " not in expr)


TIER_OF: dict[str, str] = {}  # nodeid -> tier, filled as the tests report (from the collection's mark)
SKIPS: dict[str, str] = {}  # nodeid -> skip reason, filled as the tests report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marks = {item.nodeid: [t for t in TIERS if item.get_closest_marker(t)] for item in items}
    needed = {t for tiers in marks.values() for t in tiers}
    reasons = {
        "upstream": _upstream_missing() if "upstream" in needed else None,
        "stack": _stack_missing() if "stack" in needed else None,
        "gpu": gpu_skip_reason(*cuda_devices()) if "gpu" in needed else None,
    }
    for item in items:
        # on the report, which reaches the process that summarises: this one, or pytest-xdist's controller
        item.user_properties.append(("tier", highest_tier(marks[item.nodeid])))
        for tier in marks[item.nodeid]:
            if reasons[tier]:
                item.add_marker(pytest.mark.skip(reason=reasons[tier]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    TIER_OF.setdefault(report.nodeid, dict(report.user_properties).get("tier", "hermetic"))
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        SKIPS[report.nodeid] = reason.removeprefix("Skipped: ")


def refused_skips() -> dict[str, str]:
    """The skips of this run a CI run does not accept (nodeid -> reason); empty outside CI."""
    if not is_ci(os.environ):
        return {}
    return {n: r for n, r in SKIPS.items() if not accepted_under_ci(TIER_OF.get(n, "hermetic"), r)}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if refused_skips() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    counts: dict[str, Counter] = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if hasattr(report, "nodeid"):
                counts.setdefault(TIER_OF.get(report.nodeid, "hermetic"), Counter())[outcome] += 1
    terminalreporter.section("test tiers")
    for tier in ("hermetic", *TIERS):
        c = counts.get(tier, Counter())
        failed = c["failed"] + c["error"]
        ran = f"ran {c['passed'] + failed} (passed {c['passed']}, failed {failed})"
        terminalreporter.write_line(f"{tier:9s} {ran}, skipped {c['skipped']}")
    by_reason: dict[str, list[str]] = {}
    for nodeid, reason in sorted(SKIPS.items()):
        by_reason.setdefault(reason, []).append(nodeid)
    refused = refused_skips()
    for reason, nodeids in by_reason.items():
        verdict = " [not accepted under CI=true]" if nodeids[0] in refused else ""
        terminalreporter.write_line(f"skipped {len(nodeids)}: {reason}{verdict}")
        for nodeid in nodeids:
            terminalreporter.write_line(f"    {nodeid}")
    if refused:
        terminalreporter.write_line(
            f"CI=true: {len(refused)} skip(s) not accepted (a CI run accepts only the GPU tier's "
            "`no CUDA device`; install or build what the reason names): the run fails",
            red=True,
        )


@pytest.fixture(scope="session")
def synthetic_dataset() -> Path:
    """Root of a small synthetic nuScenes-format data set (3 scenes incl. one val scene, 4 key frames each).

    Built once by `synthdata.ensure_dataset` and cached under data/synthetic/ (rebuilt when the generator
    changes). Treat it as read-only.
    """
    from synthdata import ensure_dataset

    return ensure_dataset(scenes=3, samples_per_scene=4, seed=0)


@pytest.fixture(scope="session", autouse=True)
def session_temp_folder(tmp_path_factory: pytest.TempPathFactory):
    """The temp folder of this test session and of every process it starts (``TMPDIR``): what they
    leave there (torchrun's ``torchelastic_*`` folders, multiprocessing's ``pymp-*`` of a killed
    process) goes with the session's temp dir, of which pytest keeps the last 3 runs, instead of
    piling up in the system's temp folder."""
    folder = tmp_path_factory.mktemp("tmp")
    before_env, before_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = str(folder)
    yield folder
    tempfile.tempdir = before_dir
    if before_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before_env


@pytest.fixture(scope="session", autouse=True)
def frame_store_folder(tmp_path_factory: pytest.TempPathFactory):
    """The DALI loader's frame stores of this test session (and its subprocesses): in the session's
    temp dir, never in the user's cache."""
    folder = tmp_path_factory.mktemp("frame-stores")
    before = os.environ.get("STREAMPETR_DALI_FRAME_STORES")
    os.environ["STREAMPETR_DALI_FRAME_STORES"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("STREAMPETR_DALI_FRAME_STORES", None)
    else:
        os.environ["STREAMPETR_DALI_FRAME_STORES"] = before
