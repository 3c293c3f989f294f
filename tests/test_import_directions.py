"""The packages of scripts/ and overlay/ import each other in one direction only: no two of them import
each other (read from the code, lazy imports inside functions included); inside overlaytool, no
module imports from a floor above its own; no module takes a name from its own package's root (a
root only re-exports); and every package, the noxfile and overlay/tools reach another package only
through its faces (:data:`FACES`): its root, a name of its ``__all__``, and for the loader its
toolkit module; a face holds few names (:data:`FACE_LIMITS`, :data:`SCRIPTS_FACE_LIMITS`) and no
name is on two faces; the scripts/ packages and the noxfile take few names from each other
(:data:`CROSSING_LIMIT`); and nothing outside the loader package builds the loader past its builders
(:data:`BUILDERS`)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("scripts", "overlay")
PACKAGE_ROOTS = (*SOURCE_ROOTS, "overlay/tools")  # overlay/tools/<package>: what lands in upstream's tools/


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
    edges = package_imports([REPO_ROOT / r for r in PACKAGE_ROOTS])
    assert {"gpu_kits", "gpukit", "slurm_local", "dali_streampetr", "tool_hooks"} <= edges.keys()
    assert "gpukit" in edges["gpu_kits"]  # the one direction: gpu_kits builds the kit
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


def names_from_own_root(package: Path) -> list[str]:
    """``package/file:line name`` of every name (not a submodule) a module of ``package`` takes from
    its own package's ``__init__`` or a subpackage's: a root only re-exports."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module.split(".") if node.module else []
            if node.level:
                base = parts[: len(parts) - node.level] + module
            elif module[:1] == [package.name]:
                base = module[1:]
            else:
                continue
            if (package.joinpath(*base) / "__init__.py").is_file():
                where = f"{package.name}/{path.relative_to(package).as_posix()}:{node.lineno}"
                names = [a.name for a in node.names if not _is_module(package.joinpath(*base, a.name))]
                found += [f"{where} {name}" for name in names]
    return found


def test_no_module_takes_a_name_from_its_own_package_root() -> None:
    roots = [p.parent for r in PACKAGE_ROOTS for p in sorted((REPO_ROOT / r).glob("*/__init__.py"))]
    assert [f for root in roots for f in names_from_own_root(root)] == []


def test_a_name_taken_from_the_own_root_is_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for rel, body in {
        "__init__.py": "from .errors import Error\n",
        "errors.py": "class Error(Exception): ...\n",
        "base.py": "from . import Error, errors\nfrom .errors import Error\n",
        "tree/__init__.py": "X = 1\n",
        "tree/apply.py": "from .. import Error\nfrom . import X\nfrom pkg import base\n"
        "from pkg.tree import X\n",
    }.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(body)
    assert names_from_own_root(package) == [
        "pkg/base.py:1 Error",
        "pkg/tree/apply.py:1 Error",
        "pkg/tree/apply.py:2 X",
        "pkg/tree/apply.py:4 X",
    ]


# The loader's faces -> the most names each may hold (issue #59), each name used twice or documented.
FACE_LIMITS = {"dali_streampetr": 11, "dali_streampetr.toolkit": 10, "dali_streampetr.runner": 9}

# Every package of scripts/ and overlay/ -> its faces: the modules another package (or the noxfile)
# may import. `from <root> import name` takes a name of the root's `__all__` only (not a submodule).
FACES = {
    "batchview": {"batchview"},
    "equivalence": {"equivalence"},
    "forkwatch": {"forkwatch"},
    "gpu_kits": {"gpu_kits"},
    "gpukit": {"gpukit"},
    "interpreter": {"interpreter"},
    "loaderbench": {"loaderbench"},
    "node_rehearsal": {"node_rehearsal"},
    "overlaytool": {"overlaytool"},
    "python_matrix": {"python_matrix"},
    "slurm_local": {"slurm_local"},
    "synthdata": {"synthdata"},
    "upstream_env": {"upstream_env"},
    "upstream_run": {"upstream_run"},
    "wheelhouse": {"wheelhouse"},
    "tool_hooks": {"tool_hooks"},  # the hooks of upstream's tools/ (the patches' face: test_patch_hooks.py)
    "dali_streampetr": set(FACE_LIMITS),  # the entry points, the tools' parts, the mmcv side (the hooks')
}


def importers(repo: Path) -> dict[Path, str]:
    """Every Python file of scripts/, overlay/ and the noxfile -> the package (folder) it belongs to
    (a package of overlay/tools/ is its own)."""
    files = {repo / "noxfile.py": "noxfile"}
    for root in PACKAGE_ROOTS:
        for path in (repo / root).rglob("*.py"):
            parts = path.relative_to(repo / root).parts
            files[path] = parts[0] if len(parts) > 1 else path.stem
    return files


def past_the_faces(repo: Path, faces: dict[str, set[str]], exported: dict[str, set[str]]) -> list[str]:
    """``file:line module`` of every import (lazy ones included) that reaches a module of another
    package than its faces: ``import``/``from`` a module past them, or ``from <root> import`` a name
    the root does not export (``exported``: package -> its ``__all__``)."""
    found = []
    for path, owner in sorted(importers(repo).items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if node.module in exported:
                    names += [
                        f"{node.module}.{a.name}" for a in node.names if a.name not in exported[node.module]
                    ]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                package = name.split(".")[0]
                if package in faces and package != owner and name not in faces[package]:
                    found.append(f"{path.relative_to(repo).as_posix()}:{node.lineno} {name}")
    return found


def packages(repo: Path) -> set[str]:
    return {p.parent.name for root in PACKAGE_ROOTS for p in (repo / root).glob("*/__init__.py")}


def test_every_package_is_reached_through_its_faces_only() -> None:
    assert packages(REPO_ROOT) == FACES.keys(), "every package has its row in FACES"
    exported = {name: set(getattr(importlib.import_module(name), "__all__", ())) for name in FACES}
    assert past_the_faces(REPO_ROOT, FACES, exported) == []


def test_every_name_of_a_face_is_there() -> None:
    """A scripts/ face lists only names its modules define, none named like a submodule (which would
    hide the name once the submodule is imported); the loader's face is the loader's own tests', and
    so is the hooks' (tests/tool_hooks/: its names need mmcv)."""
    for name in FACES.keys() - {"dali_streampetr", "tool_hooks"}:
        face = importlib.import_module(name)
        folder = Path(face.__file__).parent
        modules = {p.stem for p in folder.glob("*.py")} | {
            p.parent.name for p in folder.glob("*/__init__.py")
        }
        names = getattr(face, "__all__", ())  # none: a command-line package, no names for others
        assert not set(names) & modules, name
        for public in names:
            assert getattr(face, public) is not None, f"{name}.{public}"


def test_an_import_past_the_faces_is_named(tmp_path: Path) -> None:
    for rel, body in {
        "noxfile.py": "from tool import run\nfrom tool.cli import main\n",
        "scripts/tool/__init__.py": "",
        "scripts/tool/cli.py": "from tool import helpers\nimport other.deep\n",
        "scripts/other/__init__.py": "",
        "scripts/other/use.py": (
            "import tool\nfrom tool import run, cli\n"
            "def f():\n    from tool.cli import main\n    import dali_streampetr.runner.collate\n"
        ),
        "overlay/dali_streampetr/__init__.py": "",
        "overlay/tools/hooks/driver.py": "from dali_streampetr.toolkit import Source\nimport other.use\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    faces = {
        "tool": {"tool"},
        "other": {"other"},
        "dali_streampetr": {"dali_streampetr", "dali_streampetr.toolkit"},
    }
    exported = {"tool": {"run"}, "other": set(), "dali_streampetr": set()}
    assert packages(tmp_path) == faces.keys()
    assert past_the_faces(tmp_path, faces, exported) == [
        "noxfile.py:2 tool.cli",
        "overlay/tools/hooks/driver.py:2 other.use",
        "scripts/other/use.py:2 tool.cli",
        "scripts/other/use.py:4 tool.cli",
        "scripts/other/use.py:5 dali_streampetr.runner.collate",
        "scripts/tool/cli.py:2 other.deep",
    ]


def test_each_loader_face_holds_few_names_each_used_twice_or_documented() -> None:
    faces = {face: importlib.import_module(face).__all__ for face in FACE_LIMITS}
    assert {face: len(names) for face, names in faces.items() if len(names) > FACE_LIMITS[face]} == {}
    names = [name for face in faces.values() for name in face]
    assert sorted({name for name in names if names.count(name) > 1}) == []  # no name on two faces
    users = [p for p, owner in importers(REPO_ROOT).items() if owner != "dali_streampetr"]
    users += REPO_ROOT.glob("patches/*/*.patch")
    words = [set(re.findall(r"\w+", p.read_text(encoding="utf-8"))) for p in users]
    documented = (REPO_ROOT / "docs" / "loader.md").read_text(encoding="utf-8")
    assert [n for n in names if sum(n in w for w in words) < 2 and f"`{n}`" not in documented] == []


# scripts/ faces -> the most names each may hold (issue #59: a face carries few names; a name one
# outside file uses moves next to it, or that file calls a broader entry point).
SCRIPTS_FACE_LIMITS = {"upstream_env": 10}


def test_the_scripts_faces_hold_few_names_and_no_name_is_on_two_faces() -> None:
    faces = {name: getattr(importlib.import_module(name), "__all__", ()) for name in FACES}
    limits = {name: len(faces[name]) for name in SCRIPTS_FACE_LIMITS}
    assert {name: n for name, n in limits.items() if n > SCRIPTS_FACE_LIMITS[name]} == {}
    owners: dict[str, list[str]] = {}
    for package, names in sorted(faces.items()):
        for public in names:
            owners.setdefault(public, []).append(package)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}  # one name, one face


# The most (package, name) pairs the packages of scripts/ and the noxfile take from the scripts/
# packages they are not (issue #59: a face carries few names).
CROSSING_LIMIT = 40  # issue #59's line


def crossing_names(repo: Path) -> dict[tuple[str, str], list[str]]:
    """(package, name) -> the files that take ``name`` from the scripts/ ``package`` (``from package``
    or ``from package.module import name``, lazy imports included) in another scripts/ package or
    the noxfile."""
    scripts = {p.parent.name for p in (repo / "scripts").glob("*/__init__.py")}
    found: dict[tuple[str, str], list[str]] = {}
    for path, owner in sorted(importers(repo).items()):
        if not path.is_relative_to(repo / "scripts") and owner != "noxfile":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                package = node.module.split(".")[0]
                if package in scripts and package != owner:
                    for alias in node.names:
                        found.setdefault((package, alias.name), []).append(path.relative_to(repo).as_posix())
    return found


def test_the_scripts_packages_take_few_names_from_each_other() -> None:
    pairs = crossing_names(REPO_ROOT)
    listing = "\n".join(f"{p}.{n}: {', '.join(sorted(set(f)))}" for (p, n), f in sorted(pairs.items()))
    assert len(pairs) <= CROSSING_LIMIT, f"{len(pairs)} names cross:\n{listing}"


def test_a_name_taken_across_packages_is_counted(tmp_path: Path) -> None:
    for rel, body in {
        "noxfile.py": "from tool import run\nfrom os import path\n",
        "scripts/tool/__init__.py": "from .cli import run\n",
        "scripts/tool/cli.py": "from tool import helpers\n\ndef run(): ...\n",
        "scripts/other/use.py": "from tool.cli import run, main\n\ndef f():\n    from tool import run\n",
        "scripts/other/__init__.py": "",
        "overlay/pkg/__init__.py": "from tool import run\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    assert crossing_names(tmp_path) == {
        ("tool", "main"): ["scripts/other/use.py"],
        ("tool", "run"): ["noxfile.py", "scripts/other/use.py", "scripts/other/use.py"],
    }


# The loader's classes -> the builder a caller outside the loader package builds one with (the
# builders read the config once, take the distributed arguments, and check what they are given).
BUILDERS = {"DaliStreamLoader": "build_loader", "DaliDataLoader": "build_dali_loader"}


def built_past_the_builders(repo: Path, builders: dict[str, str]) -> list[str]:
    """``file:line Class(...)`` of every call of a loader class in scripts/, overlay/ (outside the
    loader package) and the noxfile, with the builder to call instead."""
    found = []
    for path, owner in sorted(importers(repo).items()):
        if owner == "dali_streampetr":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if called in builders:
                    where = f"{path.relative_to(repo).as_posix()}:{node.lineno}"
                    found.append(f"{where} {called}(...): build it with {builders[called]}")
    return found


def test_no_script_builds_the_loader_past_its_builders() -> None:
    assert built_past_the_builders(REPO_ROOT, BUILDERS) == []


def test_a_loader_built_past_its_builder_is_named(tmp_path: Path) -> None:
    for rel, body in {
        "scripts/bench/run.py": (
            "from dali_streampetr import DaliStreamLoader, build_loader\n"
            "a = DaliStreamLoader(cfg, root)\nb = build_loader(cfg, root)\n"
        ),
        "scripts/bench/deep.py": "import dali_streampetr as d\n\ndef f():\n    return d.DaliStreamLoader()\n",
        "overlay/dali_streampetr/loader.py": "def build_loader(c, r):\n    return DaliStreamLoader(c, r)\n",
        "overlay/tools/hooks/choice.py": "from dali_streampetr import DaliDataLoader\nDaliDataLoader(x)\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    (tmp_path / "noxfile.py").write_text("")
    assert built_past_the_builders(tmp_path, BUILDERS) == [
        "overlay/tools/hooks/choice.py:2 DaliDataLoader(...): build it with build_dali_loader",
        "scripts/bench/deep.py:4 DaliStreamLoader(...): build it with build_loader",
        "scripts/bench/run.py:2 DaliStreamLoader(...): build it with build_loader",
    ]
