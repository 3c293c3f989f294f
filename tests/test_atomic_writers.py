"""One atomic writer per house (docs/reliability.md): nothing in scripts/, overlay/ or the noxfile
renames a file into place but the two writers, the loader package's (``dali_streampetr.atomic_file``:
it runs inside the upstream checkout without scripts/) and the tooling's
(``overlaytool.atomic_write``: every package of scripts/, the GPU kit carries it), and the moves
named below (read from the code: ``os.replace``/``os.rename`` and ``Path.replace``/``Path.rename``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRITERS = {
    "overlay/dali_streampetr/atomic_file.py": "the loader package: frame stores, checkpoints, latest.pth",
    "scripts/overlaytool/atomic_write.py": "the tooling: every package of scripts/ and the noxfile",
}
MOVES = {  # whole folders or finished files moved where they belong: no content is written there
    "scripts/overlaytool/checkout/clone.py": "a fresh clone's folder, onto a missing or empty one",
    "scripts/overlaytool/fetch.py": "a fetched mirror's folder swapped for the old one",
    "scripts/upstream_env/paths.py": "a built wheel's cache folder",
    "scripts/upstream_env/cuda_toolkit.py": "an unpacked CUDA toolkit's folder",
    "scripts/gpukit/stack.py": "reassembled kit files moved to where the node's steps read them",
    "scripts/gpu_kits/stack_kit.py": "a kit's parts moved from staging into their bundles",
    "scripts/gpukit/parts.py": "a kit file reassembled and checked against its sha256, rebuilt every run",
}


def renames(path: Path) -> list[int]:
    """The lines of ``path`` that rename or replace a path: ``os.replace``/``os.rename`` and a one-argument
    ``.replace``/``.rename`` (a ``Path``'s; ``str.replace`` takes two)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in ("replace", "rename") and (
                (isinstance(f.value, ast.Name) and f.value.id == "os")
                or len(node.args) + len(node.keywords) == 1
            ):
                found.append(node.lineno)
    return found


def renaming_files(root: Path) -> dict[str, list[int]]:
    """Python file of scripts/, overlay/ and the noxfile (relative path) -> the lines that rename."""
    files = [*root.glob("scripts/**/*.py"), *root.glob("overlay/**/*.py"), root / "noxfile.py"]
    found = {p.relative_to(root).as_posix(): renames(p) for p in sorted(files) if p.is_file()}
    return {path: lines for path, lines in found.items() if lines}


def test_files_are_renamed_into_place_only_by_their_houses_writer() -> None:
    found = renaming_files(ROOT)
    named = WRITERS.keys() | MOVES.keys()
    assert {path: lines for path, lines in found.items() if path not in named} == {}
    assert sorted(named - found.keys()) == [], "named here, but renames nothing any more: drop it"


def test_a_temporary_file_renamed_over_its_target_is_found(tmp_path: Path) -> None:
    for rel, body in {
        "scripts/tool/report.py": "import os\ntmp.write_text(t)\nos.replace(tmp, path)\n",
        "scripts/tool/cache.py": "partial.write_bytes(b)\npartial.replace(path)\n",
        "overlay/pkg/store.py": "def f():\n    os.rename(a, b)\n",
        "scripts/tool/text.py": "name.replace('a', 'b')\ns.replace(old, new, 1)\n",
        "noxfile.py": "Path(x).rename(y)\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    assert renaming_files(tmp_path) == {
        "noxfile.py": [1],
        "overlay/pkg/store.py": [2],
        "scripts/tool/cache.py": [2],
        "scripts/tool/report.py": [3],
    }
