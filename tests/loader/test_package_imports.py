"""Every module of the loader package but its mmcv side imports without mmcv/mmdet (the hermetic
env has neither), as the package's docstring and docs/loader.md say."""

from __future__ import annotations

import importlib
import pkgutil

import dali_streampetr
import pytest

MMCV_SIDE = {
    "runner.mmdet_adapter",
    "runner.integration",
    "runner.distributed",
    "runner.state_hook",
    "runner.schedule_log",
    "runner.requeue",
}
MODULES = sorted(
    m.name.removeprefix("dali_streampetr.")
    for m in pkgutil.walk_packages(dali_streampetr.__path__, "dali_streampetr.")
)


def test_the_mmcv_side_is_what_the_docs_name() -> None:
    assert set(MODULES) >= MMCV_SIDE
    assert importlib.util.find_spec("mmcv") is None, "run in the hermetic env (no mmcv)"


@pytest.mark.parametrize("name", [m for m in MODULES if m not in MMCV_SIDE])
def test_module_imports_without_mmcv(name: str) -> None:
    importlib.import_module(f"dali_streampetr.{name}")
