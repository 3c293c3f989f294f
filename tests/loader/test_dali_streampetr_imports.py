"""Every module of the loader package but its mmcv side imports without mmcv/mmdet (the hermetic
env has neither), as the package's docstring and docs/loader.md say; the package's face hands out
its entry points lazily, so importing the package itself imports none of torch, DALI or mmcv."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import dali_streampetr
import pytest

MMCV_SIDE = {
    "runner.collate",
    "runner.dataloader",
    "runner.state_hook",
    "runner.requeue",
    "runner.checkpoints",
    "runner.devices",
    "runner.eval_gather",
    "runner.upstream_loaders",
}
MODULES = sorted(
    m.name.removeprefix("dali_streampetr.")
    for m in pkgutil.walk_packages(dali_streampetr.__path__, "dali_streampetr.")
)
LOADER_DOC = Path(__file__).resolve().parents[2] / "docs" / "loader.md"


def test_the_mmcv_side_is_what_the_docs_name() -> None:
    assert set(MODULES) >= MMCV_SIDE
    assert importlib.util.find_spec("mmcv") is None, "run in the hermetic env (no mmcv)"


@pytest.mark.parametrize("name", [m for m in MODULES if m not in MMCV_SIDE])
def test_module_imports_without_mmcv(name: str) -> None:
    importlib.import_module(f"dali_streampetr.{name}")


def test_importing_the_package_imports_no_heavy_module() -> None:
    code = (
        "import sys, dali_streampetr; "
        "print(sorted(m for m in ('torch', 'nvidia.dali', 'numpy', 'mmcv') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(dali_streampetr.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", dali_streampetr.__all__)
def test_each_entry_point_is_the_object_of_its_module(name: str) -> None:
    module = dali_streampetr._EXPORTS[name]
    if module in MMCV_SIDE:
        with pytest.raises(ModuleNotFoundError, match="mmcv|mmdet"):
            getattr(dali_streampetr, name)
        return
    assert getattr(dali_streampetr, name) is getattr(
        importlib.import_module(f"dali_streampetr.{module}"), name
    )
    assert name in dir(dali_streampetr)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'build_loadr'"):
        dali_streampetr.build_loadr  # noqa: B018


def test_the_docs_list_every_entry_point() -> None:
    text = LOADER_DOC.read_text()
    section = text[text.index("## Entry points") :].split("\n## ", 1)[0]
    assert {name for name in dali_streampetr.__all__ if f"`{name}`" not in section} == set()
