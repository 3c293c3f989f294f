"""Each piece of plumbing is written once (read from the code of scripts/, overlay/ and the noxfile):
the repository root is computed in ``overlaytool.targets`` alone (the noxfile finds its own folder
to put scripts/ on the path); the CPU seconds of a process are read with ``getrusage`` in
``gpukit.steps`` alone; another Python is asked its version by ``interpreter.choice`` (a bare one)
and ``gpukit.node`` (one with torch: the kit's probe) alone; the OpenMMLab env's folder is spelled
in ``upstream_env.paths`` alone (``env_python()``; ``root=``: a clone's); and a stamp (a file read
back to decide whether work is done) is written by its house's atomic writer, never with
``write_text`` or ``write_bytes``: a torn stamp that reads as current skips the work. The atomic
writers themselves are tests/test_atomic_writers.py's."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPO_ROOT_AT = "scripts/overlaytool/targets.py"
CPU_SECONDS_AT = "scripts/gpukit/steps.py"
VERSION_PROBES_AT = ["scripts/gpukit/node.py", "scripts/interpreter/choice.py"]
ENV_FOLDER_AT = {
    "scripts/upstream_env/paths.py": "env_python()",
    "scripts/gpukit/stack.py": "the kit's runner runs from the kit folder alone (stdlib, no project import)",
}
# files that write a stamp in place, and why that is allowed there
STAMPS_IN_PLACE = {
    "scripts/gpukit/stack.py": "the kit's runner runs from the kit folder alone (stdlib, no house writer); "
    "its stamp must equal the kit's id, so a torn one reruns the step",
}


def sources(root: Path) -> list[Path]:
    return sorted([*root.glob("scripts/**/*.py"), *root.glob("overlay/**/*.py"), root / "noxfile.py"])


def _uses_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node))


def repo_root_lines(tree: ast.AST) -> list[int]:
    """Lines that climb from ``__file__`` past its folder: ``Path(__file__)...parents[i]`` or
    ``....parent.parent``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            climbs = node.value.attr == "parents" and _uses_file(node.value)
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = node.value
            climbs = isinstance(inner, ast.Attribute) and inner.attr == "parent" and _uses_file(inner)
        else:
            continue
        if climbs:
            found.append(node.lineno)
    return found


def getrusage_lines(tree: ast.AST) -> list[int]:
    """Lines that call ``getrusage`` (``resource.getrusage`` or the bare name)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "getrusage")
            or (isinstance(node.func, ast.Name) and node.func.id == "getrusage")
        )
    ]


def version_probe_lines(tree: ast.AST) -> list[int]:
    """Lines of code given to another Python that asks its version: a string holding ``sys.version``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "sys.version" in node.value
    ]


def in_place_stamp_lines(tree: ast.AST) -> list[int]:
    """Lines that write a stamp with ``write_text``/``write_bytes``: the written path's expression
    names a stamp (``stamp.write_text(...)``, ``(env / STAMP).write_text(...)``)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("write_text", "write_bytes")
        and "stamp" in ast.unparse(node.func.value).lower()
    ]


def env_folder_lines(tree: ast.AST) -> list[int]:
    """Lines that spell the OpenMMLab env's folder: a path joined from ``"_env"`` then ``"upstream"``,
    or a path string holding ``_env/upstream`` (no blank: text that names it is not a path)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = node.left, node.right
            last = left.right if isinstance(left, ast.BinOp) else left
            if all(isinstance(n, ast.Constant) for n in (last, right)) and (last.value, right.value) == (
                "_env",
                "upstream",
            ):
                found.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "_env/upstream" in node.value:
            found += [] if any(c.isspace() for c in node.value) else [node.lineno]
    return sorted(found)


def found_in(root: Path, lines: Callable[[ast.AST], list[int]]) -> dict[str, list[int]]:
    """Source file (relative path) -> the lines ``lines`` finds in it, files without any left out."""
    found = {}
    for path in sources(root):
        if path.is_file() and (hit := lines(ast.parse(path.read_text(encoding="utf-8")))):
            found[path.relative_to(root).as_posix()] = hit
    return found


def test_the_repository_root_is_computed_in_one_place() -> None:
    found = found_in(ROOT, repo_root_lines)
    assert list(found) == [REPO_ROOT_AT], "take `from overlaytool import REPO_ROOT` instead"


def test_cpu_seconds_are_read_in_one_place() -> None:
    found = found_in(ROOT, getrusage_lines)
    assert list(found) == [CPU_SECONDS_AT], "take `from gpukit import cpu_seconds` instead"
    assert len(found[CPU_SECONDS_AT]) <= 2  # its own process and its children


def test_another_python_is_asked_its_version_in_one_place_per_question() -> None:
    found = found_in(ROOT, version_probe_lines)
    assert sorted(found) == VERSION_PROBES_AT, "take `interpreter.choice.python_version` or `gpukit.probe`"


def test_the_openmmlab_env_folder_is_named_in_one_place() -> None:
    assert sorted(found_in(ROOT, env_folder_lines)) == sorted(ENV_FOLDER_AT), (
        "take `upstream_env.env_python()`"
    )


def test_stamps_are_written_by_the_house_writer() -> None:
    found = found_in(ROOT, in_place_stamp_lines)
    assert sorted(found.keys() - STAMPS_IN_PLACE.keys()) == [], "write it with replace_file"
    assert sorted(STAMPS_IN_PLACE.keys() - found.keys()) == [], "writes no stamp in place any more: drop it"


def test_a_second_root_timer_version_probe_env_folder_and_stamp_in_place_are_found(
    tmp_path: Path,
) -> None:
    for rel, body in {
        "scripts/a/paths.py": "from pathlib import Path\nROOT = Path(__file__).resolve().parents[2]\n",
        "scripts/a/up.py": "import os\nTOP = Path(__file__).parent.parent\n",
        "scripts/a/here.py": "HERE = Path(__file__).parent\nSITE = Path(torch.__file__).parents[1]\n",
        "overlay/b/cpu.py": "import resource\ndef f():\n    return resource.getrusage(0)\n",
        "noxfile.py": "from resource import getrusage\nx = getrusage(0)\n",
        "scripts/c/build.py": "stamp.write_text(key)\n(env / STAMP).write_bytes(b)\nlog.write_text(t)\n",
        "scripts/c/ok.py": "replace_file(env / STAMP, key)\nstamp_path.read_text()\nv = sys.version\n",
        "scripts/c/ask.py": "run([python, '-c', 'import sys; print(sys.version)'])\n",
        "scripts/d/env.py": "P = ROOT / '.nox' / '_env' / 'upstream' / 'bin'\nQ = '.nox/_env/upstream'\n",
        "scripts/d/doc.py": "'''The env at .nox/_env/upstream.'''\n",
        "scripts/d/other.py": "H = ROOT / '.nox' / '_env' / 'hermetic'\nU = ROOT / 'upstream'\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    assert found_in(tmp_path, repo_root_lines) == {"scripts/a/paths.py": [2], "scripts/a/up.py": [2]}
    assert found_in(tmp_path, getrusage_lines) == {"noxfile.py": [2], "overlay/b/cpu.py": [3]}
    assert found_in(tmp_path, in_place_stamp_lines) == {"scripts/c/build.py": [1, 2]}
    assert found_in(tmp_path, version_probe_lines) == {"scripts/c/ask.py": [1]}
    assert found_in(tmp_path, env_folder_lines) == {"scripts/d/env.py": [1, 2]}
