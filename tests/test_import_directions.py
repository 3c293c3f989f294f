"""The packages of scripts/ and overlay/ import each other in one direction only: no two of them
import each other (read from the code, lazy imports inside functions included)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("scripts", "overlay")


def package_imports(roots: list[Path]) -> dict[str, set[str]]:
    """package -> the other packages (folders directly under one of ``roots``) its modules import."""
    files = {p.relative_to(root).parts[0]: root for root in roots for p in root.glob("*/__init__.py")}
    edges: dict[str, set[str]] = {name: set() for name in files}
    for name, root in files.items():
        for path in (root / name).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                edges[name] |= {m.split(".")[0] for m in modules} & (files.keys() - {name})
    return edges


def mutual(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of packages that import each other."""
    return sorted((a, b) for a, targets in edges.items() for b in targets if a < b and a in edges[b])


def test_no_two_packages_import_each_other() -> None:
    edges = package_imports([REPO_ROOT / r for r in SOURCE_ROOTS])
    assert {"wheelhouse", "gpukit", "slurm_local", "dali_streampetr"} <= edges.keys()
    assert "gpukit" in edges["wheelhouse"]  # the one direction: the wheelhouse builds the kit
    assert mutual(edges) == []


def test_a_pair_that_imports_each_other_is_named(tmp_path: Path) -> None:
    for package, body in {
        "a": "def f():\n    from b.y import g\n",
        "b": "import a.x\n",
        "c": "import a\n",
    }.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / ("x.py" if package == "a" else "y.py")).write_text(body)
    edges = package_imports([tmp_path])
    assert edges == {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert mutual(edges) == [("a", "b")]
