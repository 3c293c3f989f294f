"""Test tiers: hermetic (always), upstream (pins in the local cache), stack (OpenMMLab env), gpu.

Tests of a tier whose prerequisites are missing are skipped with one line saying how to enable
the tier; the end of the run prints which tiers ran.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from overlaytool.cache import is_cached
from overlaytool.targets import load_targets

REPO_ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_PYTHON = REPO_ROOT / ".nox" / "_env" / "upstream" / "bin" / "python"
TIERS = ("upstream", "stack", "gpu")


def _upstream_missing() -> str | None:
    missing = [t.pin.name for t in load_targets(REPO_ROOT) if not is_cached(t.pin)]
    if missing:
        return (
            f"upstream tier skipped: the local upstream cache lacks {', '.join(missing)}; "
            "enable it with `nox -s fetch` (or `nox -s fetch -- --from <mirror-or-clone>`)"
        )
    return None


def _stack_missing() -> str | None:
    if importlib.util.find_spec("mmcv") is None:
        if not UPSTREAM_PYTHON.exists():
            return "stack tier skipped: no OpenMMLab env; `nox -s tests` builds it when the pins are cached"
        return "stack tier skipped in this interpreter: it runs inside the OpenMMLab env (`nox -s tests`)"
    if not (REPO_ROOT / "upstream" / "StreamPETR" / ".git").exists():
        return "stack tier skipped: upstream/StreamPETR is not applied; run `nox -s apply`"
    return None


def _gpu_missing() -> str | None:
    return None if shutil.which("nvidia-smi") else "gpu tier skipped: no NVIDIA GPU on this machine"


TIER_OF: dict[str, str] = {}  # nodeid -> tier, filled at collection


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons = {"upstream": _upstream_missing(), "stack": _stack_missing(), "gpu": _gpu_missing()}
    for item in items:
        marked = [tier for tier in TIERS if item.get_closest_marker(tier)]
        TIER_OF[item.nodeid] = next((t for t in ("gpu", "stack", "upstream") if t in marked), "hermetic")
        for tier in marked:
            if reasons[tier]:
                item.add_marker(pytest.mark.skip(reason=reasons[tier]))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    counts: dict[str, Counter] = {}
    reasons: dict[str, str] = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if not hasattr(report, "nodeid"):
                continue
            tier = TIER_OF.get(report.nodeid, "hermetic")
            counts.setdefault(tier, Counter())[outcome] += 1
            if outcome == "skipped" and isinstance(report.longrepr, tuple):
                reasons.setdefault(tier, report.longrepr[2].removeprefix("Skipped: "))
    terminalreporter.section("test tiers")
    for tier in ("hermetic", *TIERS):
        c = counts.get(tier, Counter())
        failed = c["failed"] + c["error"]
        passed, skipped = c["passed"], c["skipped"]
        line = f"{tier:9s} ran {passed + failed} (passed {passed}, failed {failed}), skipped {skipped}"
        if c["skipped"] and tier in reasons:
            line += f" — {reasons[tier]}"
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def synthetic_dataset() -> Path:
    """Root of a small synthetic nuScenes-format data set (3 scenes incl. one val scene, 4 key frames each).

    Built once by `synthdata.ensure_dataset` and cached under data/synthetic/ (rebuilt when the generator
    changes). Treat it as read-only.
    """
    from synthdata import ensure_dataset

    return ensure_dataset(scenes=3, samples_per_scene=4, seed=0)


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
