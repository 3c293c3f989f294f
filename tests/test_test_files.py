"""The rules of tests/ itself (docs/tests.md): no module of tests/ imports a test file (what several
test files share lives in a helper module); every package has a test folder that mirrors it and
names each of its test files after a module of the package's folder it mirrors (read from the code,
lazy imports inside functions included), and every other test folder is listed as testing several
packages together; the overlay's ``tools/`` holds packages only (the hooks' home, no loose
modules); every module of tests/ has a name no other has."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tiers import TIERS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# tests/<folder> -> the package folder it mirrors, folder by folder: one per package of scripts/, overlay/
# and overlay/tools/ (what lands in upstream's tools/, beside the patched scripts)
MIRRORS = {
    "batchview": "scripts/batchview",
    "equivalence": "scripts/equivalence",
    "forkwatch": "scripts/forkwatch",
    "gpu_kits": "scripts/gpu_kits",
    "gpukit": "scripts/gpukit",
    "interpreter": "scripts/interpreter",
    "loader": "overlay/dali_streampetr",
    "loaderbench": "scripts/loaderbench",
    "node_rehearsal": "scripts/node_rehearsal",
    "overlaytool": "scripts/overlaytool",
    "python_matrix": "scripts/python_matrix",
    "slurm_local": "scripts/slurm_local",
    "synthdata": "scripts/synthdata",
    "tool_hooks": "overlay/tools/tool_hooks",
    "upstream_env": "scripts/upstream_env",
    "upstream_run": "scripts/upstream_run",
    "wheelhouse": "scripts/wheelhouse",
}
# tests/<folder> that tests several packages together, and what it tests
ACROSS = {
    "gpu": "the GPU tier: the loader's GPU graph on a CUDA device",
    "upstream": "the upstream tier end to end: the series on the pin, the plugin, training, evaluation",
    "slurm": "SLURM end to end: the local cluster with overlay/tools/tool_hooks, the smoke run, requeue",
}


def imported_modules(path: Path) -> set[str]:
    """Every module name an import of ``path`` may load (``from a import b``: ``a`` and ``a.b``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def imports_of_test_files(tests: Path) -> dict[str, str]:
    """Python file of ``tests`` (relative path) -> the test modules (``test_*``) it imports."""
    test_modules = {p.stem for p in tests.rglob("test_*.py")}
    found = {}
    for path in sorted(tests.rglob("*.py")):
        taken = sorted({name.split(".")[0] for name in imported_modules(path)} & test_modules)
        if taken:
            found[path.relative_to(tests).as_posix()] = ", ".join(taken)
    return found


def unmirrored(tests: Path, package: Path) -> list[str]:
    """The test files of ``tests`` not named ``test_<module>[_<subject>][_<tier>].py`` after a module
    of the folder of ``package`` at the same relative path (the package's face, its ``__init__``,
    is named by the package: ``test_<package>[_<subject>].py``)."""
    problems = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = package / path.parent.relative_to(tests)
        modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
        if (folder / "__init__.py").is_file():
            modules.add(folder.name)
        subject = path.stem.removeprefix("test_")
        subject = next((subject.removesuffix(f"_{t}") for t in TIERS if subject.endswith(f"_{t}")), subject)
        if not any(subject == m or subject.startswith(f"{m}_") for m in modules):
            where = folder.relative_to(package.parent).as_posix()
            problems.append(f"{path.relative_to(tests.parent).as_posix()}: no module {where}/{subject}.py")
    return problems


def test_no_test_file_is_imported() -> None:
    assert imports_of_test_files(TESTS) == {}


def test_every_module_of_tests_has_a_name_of_its_own() -> None:
    """pytest imports every test file and helper by its bare name (no ``__init__.py`` in tests/): two
    of one name in two folders break a run that collects both, or one shadows the other."""
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name != "conftest.py")
    assert [name for name, n in names.items() if n > 1] == []


def test_the_mirrored_folders_name_their_test_files_after_modules() -> None:
    assert [p for folder, code in MIRRORS.items() for p in unmirrored(TESTS / folder, ROOT / code)] == []


def unplaced(root: Path, mirrors: dict[str, str], across: dict[str, str]) -> list[str]:
    """What breaks the layout of ``root``/tests: a package of scripts/, overlay/ or overlay/tools/ that
    no test folder mirrors, a module loose in overlay/tools/ (outside every package, so mirrored by
    none), and a test folder that neither mirrors a package nor is listed as testing several."""
    globs = ("scripts/*/__init__.py", "overlay/*/__init__.py", "overlay/tools/*/__init__.py")
    packages = {p.parent.relative_to(root).as_posix() for g in globs for p in root.glob(g)}
    loose = sorted(p.relative_to(root).as_posix() for p in root.glob("overlay/tools/*.py"))
    folders = {p.name for p in (root / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    missing = {code for folder, code in mirrors.items() if folder not in folders}
    return (
        [f"{p}: no test folder mirrors it" for p in sorted(packages - set(mirrors.values()) | missing)]
        + [f"{p}: a module outside every package" for p in loose]
        + [f"tests/{f}: mirrors no package" for f in sorted(folders - mirrors.keys() - across.keys())]
    )


def test_every_package_has_its_mirror_and_every_test_folder_its_place() -> None:
    assert unplaced(ROOT, MIRRORS, ACROSS) == []


def test_a_package_without_a_mirror_and_a_stray_test_folder_are_named(tmp_path: Path) -> None:
    for rel in ("scripts/a/__init__.py", "scripts/b/__init__.py", "overlay/c/__init__.py",
                "scripts/d/__init__.py", "tests/a/x.py", "tests/c/y.py", "tests/tier/z.py",
                "tests/stray/w.py", "overlay/tools/hooks/__init__.py", "overlay/tools/e/__init__.py",
                "overlay/tools/loose.py", "tests/hooks/v.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    mirrors = {"a": "scripts/a", "c": "overlay/c", "d": "scripts/d", "hooks": "overlay/tools/hooks"}
    assert unplaced(tmp_path, mirrors, {"tier": "several packages"}) == [  # the folder d is missing
        "overlay/tools/e: no test folder mirrors it",
        "scripts/b: no test folder mirrors it",
        "scripts/d: no test folder mirrors it",
        "overlay/tools/loose.py: a module outside every package",
        "tests/stray: mirrors no package",
    ]


def test_an_import_of_a_test_file_is_named(tmp_path: Path) -> None:
    for rel, body in {
        "a/test_one.py": "from test_two import helper\n",
        "b/test_two.py": "def helper():\n    import test_one.x\n",
        "b/test_three.py": "from helpers import test_data\nimport tiers\n",
        "b/helpers.py": "from test_one import y\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    assert imports_of_test_files(tmp_path) == {
        "a/test_one.py": "test_two",
        "b/helpers.py": "test_one",
        "b/test_two.py": "test_one",
    }


def test_a_test_file_named_after_no_module_is_named(tmp_path: Path) -> None:
    package, tests = tmp_path / "scripts" / "pkg", tmp_path / "tests" / "pkg"
    for rel in ("__init__.py", "cache.py", "sub/__init__.py", "sub/apply.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("")
    for rel in (
        "test_cache.py",
        "test_cache_health_stack.py",
        "test_caches.py",
        "test_apply.py",
        "sub/test_apply_faults_upstream.py",
        "sub/test_init.py",
        "sub/test_sub_imports.py",
        "test_pkg.py",
        "gone/test_apply.py",
    ):
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text("")
    assert unmirrored(tests, package) == [
        "pkg/gone/test_apply.py: no module pkg/gone/apply.py",
        "pkg/sub/test_init.py: no module pkg/sub/init.py",
        "pkg/test_apply.py: no module pkg/apply.py",
        "pkg/test_caches.py: no module pkg/caches.py",
    ]
