"""Fixtures of the end-to-end stack tests here: runs that several files assert on, made once per test
session (the helpers they call are in ``stack_runs.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_runs import FIRST_ITERS, once_per_run, train


@pytest.fixture(scope="session")
def dali_first_run(tmp_path_factory: pytest.TempPathFactory, synthetic_dataset: Path) -> tuple[Path, str]:
    """Work dir and output of a fresh ``FIRST_ITERS``-iteration training on the DALI loader (the small
    config), started with ``--auto-resume`` in an empty work dir: the run `nox -s train_dali` makes, and
    the first leg of test_long_runs_stack.py's resumed run (which continues a copy: read-only here); one
    per test run, however many xdist workers share it."""
    return once_per_run(
        tmp_path_factory,
        "dali_first_run",
        lambda work: train(synthetic_dataset, work, "--iters", str(FIRST_ITERS), "--auto-resume"),
    )
