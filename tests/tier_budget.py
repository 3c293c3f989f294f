"""The stack tier's time budget and the timings each test run records (docs/tests.md#the-stack-tiers-budget).

A test's time is counted in CPU seconds, from its setup to its teardown (module fixtures included, so
the first test of a module carries the run its module shares): the pytest process's own, user and
system, and that of every child process it waited for (training runs, torchrun and its ranks, whose
own children torchrun waited for). CPU seconds hardly move with the host's load, where wall seconds
double; the budget is therefore checked on them, and wall seconds are only recorded.

The budget (``tier_budget.json``, beside this module): every stack test that is not a ``proof`` gets
``default_cpu_s``, or the seconds ``tests`` names for it (its node id); a test over ``FAIL_FACTOR``
times its budget fails a run of the tiers (one over its budget alone is listed; pytest given no path,
as ``nox`` and CI run it; a run of given paths only warns: its test may carry its module's shared runs
alone), naming it and the two ways out: mark it ``proof``
(``nox -s proofs`` runs it) and keep its check smaller in the tier, or give it a budget in the file.
The budgets of the tests a run selects add up to at most ``tier_cpu_s``, measured on 2 cores, which a
run also checks before the first test: a budget raised past the tier's fails at once.

``StackBudget`` is the pytest plugin (``tests/conftest.py`` registers it); with a path it also records
the run (``$STREAMPETR_DALI_TIMINGS``, which ``nox -s tests`` and ``nox -s proofs`` set to
``.nox/_timings.json``): its wall and CPU seconds and, for a run of stack tests, every test's, under the
run's mark expression and Python, written whole by the tooling's writer.
"""

from __future__ import annotations

import json
import platform
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

BUDGET_FILE = Path(__file__).with_name("tier_budget.json")
# a test fails the run past this many times its budget (a new training run in the tier, at 4-10x the
# default); between 1x and this it is listed: CPU seconds still move some 10-30 % with the host and
# with which test of a module carries its shared runs
FAIL_FACTOR = 2.0
TIMINGS_ENV = "STREAMPETR_DALI_TIMINGS"
SLOW_TEST_S = 60.0  # what a test marked `slow` outside the budget weighs when xdist's files are ordered


def cpu_seconds() -> float:
    """User + system seconds of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Budget:
    default_cpu_s: float
    tier_cpu_s: float
    tests: dict[str, float] = field(default_factory=dict)

    def of(self, nodeid: str) -> float:
        return self.tests.get(nodeid, self.default_cpu_s)


def read_budget(path: Path = BUDGET_FILE) -> Budget:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Budget(
        float(data["default_cpu_s"]),
        float(data["tier_cpu_s"]),
        {k: float(v) for k, v in data["tests"].items()},
    )


def budgeted(item: pytest.Item) -> bool:
    """Whether the budget holds ``item``: a stack test (not the GPU tier's) that is not a ``proof``."""
    marks = {m.name for m in item.iter_markers()}
    return "stack" in marks and not marks & {"gpu", "proof"}


def heaviest_files_first(weights: dict[str, float]) -> list[str]:
    """The node ids of ``weights`` (node id -> its estimated CPU seconds, in collection order) file by
    file, the files whose tests weigh most first, each file's tests in their order: pytest-xdist
    (``--dist loadfile --no-loadscope-reorder``, as ``nox`` runs it) hands whole files to its workers in
    that order, so a long file does not start last and leave a core idle."""
    cost: dict[str, float] = {}
    for nodeid, seconds in weights.items():
        cost[nodeid.split("::")[0]] = cost.get(nodeid.split("::")[0], 0.0) + seconds
    return sorted(weights, key=lambda nodeid: -cost[nodeid.split("::")[0]])  # stable: files stay whole


def weight(item: pytest.Item, budget: Budget) -> float:
    """A test's estimated CPU seconds: a budgeted stack test's budget; else a second, a minute if marked
    ``slow`` (the hermetic tier's env builds and offline installs)."""
    if budgeted(item):
        return budget.of(item.nodeid)
    return SLOW_TEST_S if item.get_closest_marker("slow") else 1.0


def over_budget(measured: dict[str, float], budget: Budget, factor: float = 1.0) -> list[str]:
    """One line per budgeted test (node id -> CPU seconds) over ``factor`` times its budget."""
    return [
        f"{nodeid}: {cpu:.0f} CPU-s, over its budget of {budget.of(nodeid):g}: mark it `proof` and keep "
        "its check smaller in the tier, or give it a budget in tests/tier_budget.json"
        for nodeid, cpu in measured.items()
        if cpu > factor * budget.of(nodeid)
    ]


def tier_problem(nodeids: list[str], budget: Budget) -> str | None:
    """The line saying the budgets of ``nodeids`` add up to more than the tier's, else None."""
    total = sum(budget.of(n) for n in nodeids)
    if total <= budget.tier_cpu_s:
        return None
    return (
        f"the budgets of the {len(nodeids)} stack tests selected add up to {total:.0f} CPU-s, more than the "
        f"tier's {budget.tier_cpu_s:.0f} (tests/tier_budget.json): mark the widest `proof` instead"
    )


def record(path: Path, run: str, entry: dict) -> None:
    """Put ``entry`` under ``run`` in the timings file at ``path`` (the other runs kept; an unreadable
    file starts afresh), written whole, under the tooling's lock beside it: ``nox -s tests`` runs the
    other Pythons' sets beside the stack tier, and two runs ending together must not drop one."""
    from overlaytool import replace_file
    from overlaytool.lock import hold

    with hold(path.with_name(f"{path.name}.lock"), "a test run's timings", "timings"):
        try:
            runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
            assert isinstance(runs, dict)
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            runs = {}
        runs[run] = entry
        replace_file(path, json.dumps({"runs": runs}, indent=1, sort_keys=True) + "\n")


class StackBudget:
    """The pytest plugin: measures every test, fails a run whose budgeted tests go over, records.

    The process that runs a test measures it and puts its seconds on the test's teardown report; the
    process that reports reads them there: the same one in a plain run, the controller of pytest-xdist's
    workers (``-n``) in a parallel one, where only the controller checks and records."""

    def __init__(self, budget: Budget, timings: Path | None = None) -> None:
        self.budget, self.timings = budget, timings
        self.tests: dict[str, dict] = {}
        self.budgeted: set[str] = set()
        self.problems: list[str] = []
        self.enforced = True
        self.start = (time.monotonic(), cpu_seconds())
        self.began: dict[str, tuple[float, float]] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if hasattr(config, "workerinput"):  # an xdist worker; each orders its collection the same
            order = heaviest_files_first({item.nodeid: weight(item, self.budget) for item in items})
            rank = {nodeid: i for i, nodeid in enumerate(order)}
            items.sort(key=lambda item: rank[item.nodeid])

    def pytest_collection_finish(self, session: pytest.Session) -> None:  # after the -m deselection
        held = [item for item in session.items if budgeted(item)]
        for item in held:
            item.user_properties.append(("budgeted", True))  # on its reports: xdist's controller reads it
        problem = tier_problem(sorted(item.nodeid for item in held), self.budget)
        if problem:
            raise pytest.UsageError(problem)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        self.began[item.nodeid] = (time.monotonic(), cpu_seconds())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = (yield).get_result()
        if call.when == "teardown" and item.nodeid in self.began:
            wall, cpu = self.began.pop(item.nodeid)
            report.user_properties.append(("wall_s", round(time.monotonic() - wall, 2)))
            report.user_properties.append(("cpu_s", round(cpu_seconds() - cpu, 2)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.tests.setdefault(report.nodeid, {})
        properties = dict(report.user_properties)
        if properties.get("budgeted"):
            self.budgeted.add(report.nodeid)
        entry.update({k: properties[k] for k in ("wall_s", "cpu_s") if k in properties})
        if report.failed:
            entry["outcome"] = "failed"
        elif report.when == "call" or report.skipped:
            entry.setdefault("outcome", report.outcome)

    @pytest.hookimpl(trylast=True)  # after pytest-xdist's, which waits for its workers
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(session.config, "workerinput"):  # an xdist worker: its controller checks and records
            return
        ran = {
            n: t["cpu_s"]
            for n, t in self.tests.items()
            if n in self.budgeted and "cpu_s" in t and t.get("outcome") != "skipped"
        }
        self.problems = over_budget(ran, self.budget, FAIL_FACTOR)
        self.above = [line for line in over_budget(ran, self.budget) if line not in self.problems]
        # a run given paths may run a test without the module-mates that share its module's runs, so
        # that it carries them alone: there the lines only warn; a run of the tiers (no path: CI's) fails
        self.enforced = session.config.args_source != pytest.Config.ArgsSource.ARGS
        if self.problems and self.enforced and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.timings is not None:
            markexpr = session.config.getoption("markexpr") or "(all)"
            stack = bool(self.budgeted) or "stack" in markexpr.replace("not stack", "")
            entry = {
                "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "wall_s": round(time.monotonic() - self.start[0], 1),
                "cpu_s": round(cpu_seconds() - self.start[1], 1),
                "tests": len(self.tests),
                "over_budget": self.problems,
                "above_budget": self.above,
            }
            if stack:
                entry["per_test"] = self.tests
            record(self.timings, f"{markexpr} @ python {platform.python_version()}", entry)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.budgeted:
            return
        ran = [self.tests[n] for n in self.budgeted if "cpu_s" in self.tests.get(n, {})]
        terminalreporter.section("stack budget")
        cpu = sum(t["cpu_s"] for t in ran)
        terminalreporter.write_line(
            f"{len(ran)} budgeted stack test(s): {cpu:.0f} CPU-s of their budgets' "
            f"{sum(self.budget.of(n) for n in self.budgeted):.0f} (tier: {self.budget.tier_cpu_s:.0f})"
        )
        for line in self.above:
            terminalreporter.write_line(f"above budget (under {FAIL_FACTOR:g}x: listed, not failed) {line}")
        for line in self.problems:
            terminalreporter.write_line(f"OVER BUDGET ({FAIL_FACTOR:g}x) {line}", red=True)
        if self.problems and not self.enforced:
            terminalreporter.write_line("(a run of given paths: the budget warns; a run of the tiers fails)")
