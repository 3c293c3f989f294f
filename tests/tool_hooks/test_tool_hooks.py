"""The hooks' face, ``tool_hooks`` (``overlay/tools/tool_hooks/``): each name the patched
``tools/train.py`` and ``tools/test.py`` import is defined by the module the face names, none is
named like a module of the package (which would hide it once that module is imported), importing the
face imports none of them, and a name is imported on first use, from ``tools/`` as the scripts run."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tool_hooks

PACKAGE = Path(tool_hooks.__file__).parent


def test_each_name_is_defined_by_its_module_and_none_is_named_like_a_module() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert not set(tool_hooks.__all__) & modules
    for name, module in tool_hooks._EXPORTS.items():
        tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        assert name in defined, f"{module}.py defines no {name}"


def test_a_name_is_imported_on_first_use_from_the_scripts_folder(tmp_path: Path) -> None:
    """As ``tools/train.py`` runs: ``tools/`` is ``sys.path[0]``; the face imports nothing, the stdlib
    hooks import without torch or mmcv."""
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(PACKAGE.parent)!r})\n"
        "import tool_hooks\n"
        "before = sorted(m for m in sys.modules if m.startswith('tool_hooks.'))\n"
        "from tool_hooks import export_slurm_dist_env, require_usable_cuda\n"
        "after = sorted(m for m in sys.modules if m.startswith('tool_hooks.'))\n"
        "heavy = sorted(m for m in ('torch', 'mmcv', 'dali_streampetr') if m in sys.modules)\n"
        "print(json.dumps([before, after, export_slurm_dist_env.__module__, heavy]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    before, after, module, heavy = json.loads(done.stdout)
    assert (before, after) == ([], ["tool_hooks.driver_check", "tool_hooks.slurm_env"])
    assert (module, heavy) == ("tool_hooks.slurm_env", [])


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'init_dist'"):
        tool_hooks.init_dist  # noqa: B018
    assert set(tool_hooks.__all__) <= set(dir(tool_hooks))
