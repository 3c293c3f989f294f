"""The patches reach the overlay through two faces: every line a patch adds that imports
``dali_streampetr`` is ``from dali_streampetr.runner import <names>``, each name one that
``dali_streampetr.runner`` exports (the hook logic of the plugin's files); every line that imports
what the overlay puts in upstream's ``tools/`` (beside ``tools/train.py`` and ``tools/test.py``) is
``from tool_hooks import <names>``, each name one that ``tool_hooks`` exports (the hooks' home,
``overlay/tools/tool_hooks/``)."""

from __future__ import annotations

import re
from pathlib import Path

import dali_streampetr.runner
import tool_hooks

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS = REPO_ROOT / "overlay" / "tools"
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


ADDED_IMPORT = re.compile(r"^\+\s*(?:from\s+(\S+)\s+import\s+(.+)|import\s+(\S+))$")


def home_problems(patch_dir: Path, tools: Path, exported: set[str]) -> list[str]:
    """Every added import of a module or package of ``tools`` (the overlay's ``tools/``), a module of
    its packages by its bare name included, that is not ``from tool_hooks import <a name of exported>``."""
    home = {p.stem for p in tools.rglob("*.py")} - {"__init__"}
    home |= {p.parent.name for p in tools.rglob("__init__.py")}
    problems = []
    for patch in sorted(patch_dir.glob("*.patch")):
        for line in patch.read_text(encoding="utf-8").splitlines():
            m = None if line.startswith("+++") else ADDED_IMPORT.match(line.split("#", 1)[0].rstrip())
            module = m and (m.group(1) or m.group(3))
            if not module or module.split(".")[0] not in home:
                continue
            if module != "tool_hooks":
                problems.append(f"{patch.name}: imports {module}, not through tool_hooks")
                continue
            names = [n.strip().split(" as ")[0] for n in m.group(2).strip("() ").split(",") if n.strip()]
            problems += [f"{patch.name}: {n} is not exported by tool_hooks" for n in set(names) - exported]
    return problems


def test_every_patch_reaches_the_hooks_home_through_its_face() -> None:
    assert home_problems(REPO_ROOT / "patches" / "streampetr", TOOLS, set(tool_hooks.__all__)) == []


def test_a_patch_importing_a_hook_module_by_name_is_named(tmp_path: Path) -> None:
    tools, patches = tmp_path / "tools", tmp_path / "patches"
    for rel in ("tool_hooks/__init__.py", "tool_hooks/loader_choice.py", "loose.py"):
        (tools / rel).parent.mkdir(parents=True, exist_ok=True)
        (tools / rel).write_text("")
    patches.mkdir()
    (patches / "a.patch").write_text(
        "+    from loader_choice import training_sets  # a module of the package by name\n"
        "+from tool_hooks.loader_choice import training_sets\n"
        "+        from tool_hooks import training_sets, not_a_name\n"
        "+import loose\n"
        "+from mmcv.runner import init_dist  # not the overlay's\n"
    )
    assert home_problems(patches, tools, {"training_sets"}) == [
        "a.patch: imports loader_choice, not through tool_hooks",
        "a.patch: imports tool_hooks.loader_choice, not through tool_hooks",
        "a.patch: not_a_name is not exported by tool_hooks",
        "a.patch: imports loose, not through tool_hooks",
    ]


def test_every_patch_reaches_the_overlay_through_the_runner_face() -> None:
    assert face_problems(REPO_ROOT / "patches" / "streampetr") == []


def test_a_patch_importing_a_loader_module_directly_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.patch").write_text(
        "+from dali_streampetr.sampling.eval_shards import part_line\n"
        "+        from dali_streampetr.runner import wrap_on_cpu, not_a_name  # a hook\n"
        "+from dali_streampetr.runner import (gather_results, scene_shard)\n"
    )
    assert face_problems(tmp_path) == [
        "a.patch: imports dali_streampetr.sampling.eval_shards, not through dali_streampetr.runner",
        "a.patch: part_line is not exported by dali_streampetr.runner",
        "a.patch: not_a_name is not exported by dali_streampetr.runner",
    ]
