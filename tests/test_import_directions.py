"""The packages of scripts/ and overlay/ import each other in one direction only: no two of them
import each other (read from the code, lazy imports inside functions included); inside
overlaytool, no module imports from a floor above its own; and scripts/ reach the loader
package only through its faces, the package's entry points and its toolkit module."""

from __future__ import annotations

import ast
from pathlib import Path

import dali_streampetr

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


# overlaytool's floors, lowest first: its top-level modules (""), then the checkout, what apply
# writes into it, the export, the rebase and the command line. A module imports from its own floor
# and those below it only, so tree/ and export/ never reach up into rebase/ or __main__.
OVERLAYTOOL_FLOORS = ("", "checkout", "tree", "export", "rebase", "__main__")


def floor_of(parts: list[str], floors: tuple[str, ...]) -> int:
    """The floor of the module at ``parts`` (its path in the package, without ``.py``)."""
    if parts[0] in floors:
        return floors.index(parts[0])  # in a folder on a floor, the folder itself, or __main__
    if len(parts) == 1:
        return floors.index("")  # a top-level module, or the package's __init__
    raise AssertionError(f"{'/'.join(parts)}: its folder is on no floor of {floors}")


def imported_parts(package: Path, parts: list[str], node: ast.AST) -> list[list[str]]:
    """The modules of ``package`` (paths in it) that the import ``node`` of the module at ``parts`` loads."""
    if isinstance(node, ast.ImportFrom) and node.level:
        base = parts[: len(parts) - node.level]
        if node.module:
            return [base + node.module.split(".")]
        modules = [base + [alias.name] for alias in node.names]  # `from .. import x`: module x, or a name
        return [m if _is_module(package.joinpath(*m)) else base for m in modules]
    if isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        return []
    return [name.split(".")[1:] for name in names if name.split(".")[0] == package.name]


def _is_module(path: Path) -> bool:
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def upward_imports(package: Path, floors: tuple[str, ...]) -> list[str]:
    """``importer -> imported`` for every import of a module of ``package`` from a higher floor."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in imported_parts(package, parts, node):
                target = target or ["__init__"]
                if floor_of(target, floors) > floor_of(parts, floors):
                    found.append(f"{'/'.join(parts)} -> {'/'.join(target)}")
    return found


def test_overlaytool_imports_from_its_own_floor_and_below_only() -> None:
    package = REPO_ROOT / "scripts" / "overlaytool"
    folders = {p.parent.name for p in package.glob("*/__init__.py")}
    assert folders == set(OVERLAYTOOL_FLOORS) - {"", "__main__"}, "every folder of overlaytool has its floor"
    assert upward_imports(package, OVERLAYTOOL_FLOORS) == []


def test_an_import_from_a_higher_floor_is_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for rel, body in {
        "__init__.py": "class Error(Exception): ...\n",
        "base.py": "from . import Error\nfrom .tree import apply\n",
        "other.py": "def f():\n    import pkg.rebase.loop\n",
        "tree/__init__.py": "",
        "tree/apply.py": "from .. import Error, base\nfrom ..rebase.loop import go\nfrom . import files\n",
        "tree/files.py": "",
        "rebase/__init__.py": "",
        "rebase/loop.py": "from ..tree.apply import x\nfrom pkg.base import y\n\ndef go(): ...\n",
        "__main__.py": "from .rebase import loop\n",
    }.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(body)
    assert upward_imports(package, ("", "tree", "rebase", "__main__")) == [
        "base -> tree",
        "other -> rebase/loop",
        "tree/apply -> rebase/loop",
    ]


LOADER = "dali_streampetr"
LOADER_FACES = {LOADER, f"{LOADER}.toolkit"}  # the entry points (__all__, lazy) and the tools' parts


def past_the_faces(root: Path, entry_points: set[str]) -> list[str]:
    """``file:line module`` of every import under ``root`` that reaches a module of the loader package
    other than its faces: ``import``/``from`` a submodule, or ``from dali_streampetr import`` a name
    that is not an entry point (a submodule)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if node.module == LOADER:
                    names += [f"{LOADER}.{a.name}" for a in node.names if a.name not in entry_points]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] == LOADER and name not in LOADER_FACES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_scripts_reach_the_loader_only_through_its_faces() -> None:
    assert past_the_faces(REPO_ROOT / "scripts", set(dali_streampetr.__all__)) == []


def test_an_import_past_the_faces_is_named(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text(
        "import dali_streampetr\n"
        "from dali_streampetr import build_loader, loader\n"
        "from dali_streampetr.toolkit import ImageSource\n"
        "def f():\n"
        "    from dali_streampetr.sampling.plan import frame_draw\n"
        "    import dali_streampetr.runner.collate\n"
    )
    assert past_the_faces(tmp_path, {"build_loader"}) == [
        "tool.py:2 dali_streampetr.loader",
        "tool.py:5 dali_streampetr.sampling.plan",
        "tool.py:6 dali_streampetr.runner.collate",
    ]
