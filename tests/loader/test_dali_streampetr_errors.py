"""The loader's error classes stand in one module per wing at most (read from the code with ``ast``,
the mmcv side included), so that whoever catches one finds all of its wing's in one place."""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from pathlib import Path

import dali_streampetr

PACKAGE = Path(dali_streampetr.__file__).resolve().parent


def error_classes(package: Path) -> dict[str, str]:
    """Public exception class -> the module (path relative to ``package``) that defines it: a class
    whose base is a builtin exception, a library's ``...Error``, or another such class."""
    defined = {}  # class -> (module, its bases' names)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                defined[node.name] = (path.relative_to(package).as_posix(), bases)
    builtin = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
    found: dict[str, str] = {}
    while new := {
        name: module
        for name, (module, bases) in defined.items()
        if name not in found and any(b in builtin or b in found or b.endswith("Error") for b in bases)
    }:
        found |= new
    return found


def modules_per_wing(errors: dict[str, str]) -> dict[str, set[str]]:
    """wing (a subpackage; a top-level module is a part of its own) -> the modules that define its
    errors."""
    wings: dict[str, set[str]] = defaultdict(set)
    for module in errors.values():
        wings[module.split("/")[0] if "/" in module else module].add(module)
    return dict(wings)


def test_each_wing_defines_its_errors_in_one_module_at_most() -> None:
    wings = modules_per_wing(error_classes(PACKAGE))
    assert {"frames", "pipeline", "settings.py", "resume.py"} <= wings.keys()
    assert {wing: sorted(m) for wing, m in wings.items() if len(m) > 1} == {}


def test_a_second_module_of_errors_in_a_wing_is_named(tmp_path: Path) -> None:
    for rel, body in {
        "__init__.py": "",
        "wing/__init__.py": "",
        "wing/errors.py": "import pickle\nclass AError(RuntimeError): ...\n"
        "class BError(pickle.UnpicklingError): ...\n",
        "wing/other.py": "from .errors import AError\nclass CError(AError): ...\n"
        "class _Signal(Exception): ...\nclass D(CError): ...\n",
        "wing/plain.py": "class NotAnError: ...\n",
        "top.py": "class Mismatch(ValueError): ...\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    errors = error_classes(tmp_path)
    assert errors == {"AError": "wing/errors.py", "BError": "wing/errors.py", "CError": "wing/other.py",
                      "D": "wing/other.py", "Mismatch": "top.py"}  # fmt: skip
    assert modules_per_wing(errors) == {"wing": {"wing/errors.py", "wing/other.py"}, "top.py": {"top.py"}}
