"""The patches reach the overlay's loader package through one face: every line a patch adds that
imports ``dali_streampetr`` is ``from dali_streampetr.runner import <names>``, and each name is one
that ``dali_streampetr.runner`` exports. Hook logic for the plugin's files lives behind that face
(``tools/*.py`` reach theirs as modules of ``overlay/tools/``)."""

from __future__ import annotations

import re
from pathlib import Path

import dali_streampetr.runner

REPO_ROOT = Path(__file__).resolve().parents[1]
IMPORT = re.compile(r"^\+\s*(?:from|import)\s+(dali_streampetr\S*)(?:\s+import\s+(.+))?$")


def overlay_imports(patch_text: str) -> list[tuple[str, list[str]]]:
    """(module, names) of each added line of ``patch_text`` that imports from ``dali_streampetr``."""
    found = []
    for line in patch_text.splitlines():
        if line.startswith("+++"):
            continue
        m = IMPORT.match(line.split("#", 1)[0].rstrip())
        if m:
            listed = (m.group(2) or "").strip("() ").split(",")
            found.append((m.group(1), [n.strip().split(" as ")[0] for n in listed if n.strip()]))
    return found


def face_problems(patch_dir: Path) -> list[str]:
    exported = set(dali_streampetr.runner.__all__)
    problems = []
    for patch in sorted(patch_dir.glob("*.patch")):
        for module, names in overlay_imports(patch.read_text(encoding="utf-8")):
            if module != "dali_streampetr.runner":
                problems.append(f"{patch.name}: imports {module}, not through dali_streampetr.runner")
            problems += [f"{patch.name}: {n} is not exported by dali_streampetr.runner" for n in names
                         if n not in exported]  # fmt: skip
    return problems


def test_every_patch_reaches_the_overlay_through_the_runner_face() -> None:
    assert face_problems(REPO_ROOT / "patches" / "streampetr") == []


def test_a_patch_importing_a_loader_module_directly_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.patch").write_text(
        "+from dali_streampetr.sampling.eval_shards import part_line\n"
        "+        from dali_streampetr.runner import wrap_on_cpu, not_a_name  # a hook\n"
        "+from dali_streampetr.runner import (gather_results_cpu, rank_indices)\n"
    )
    assert face_problems(tmp_path) == [
        "a.patch: imports dali_streampetr.sampling.eval_shards, not through dali_streampetr.runner",
        "a.patch: part_line is not exported by dali_streampetr.runner",
        "a.patch: not_a_name is not exported by dali_streampetr.runner",
    ]
