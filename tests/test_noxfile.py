"""The noxfile: its version floor is the pinned nox, docs/sessions.md lists every session in the
noxfile's named sections and order (the main job first), and a session refuses an argument it would
otherwise ignore or silently override, before building anything."""

from __future__ import annotations

import ast
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOXFILE = ROOT / "noxfile.py"
SECTION = re.compile(r"^# --- (.+?) -+$")


def noxfile_tree() -> ast.Module:
    return ast.parse(NOXFILE.read_text(encoding="utf-8"), filename=str(NOXFILE))


def needs_version() -> str | None:
    for node in noxfile_tree().body:
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == "nox.needs_version" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def session_names() -> set[str]:
    return {
        node.name
        for node in noxfile_tree().body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d) == "nox.session" for d in node.decorator_list)
    }


def test_needs_version_is_the_pinned_nox() -> None:
    pins = re.findall(r"^nox==(\S+)$", (ROOT / "requirements" / "nox.txt").read_text(), re.M)
    assert len(pins) == 1, "requirements/nox.txt pins nox exactly once"
    assert needs_version() == f">={pins[0]}"


def test_sessions_page_lists_every_session() -> None:
    text = (ROOT / "docs" / "sessions.md").read_text(encoding="utf-8")
    table = text.split("## Every session", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`(?:nox -s )?(\w+)", cell)} - {"nox"}
    assert documented == session_names()


def noxfile_sections() -> list[tuple[str, list[str]]]:
    """(title, its sessions in order) of every section of the noxfile that holds sessions: a section
    starts at a ``# --- <title> ---`` line."""
    lines = NOXFILE.read_text(encoding="utf-8").splitlines()
    starts = [(i + 1, m.group(1)) for i, line in enumerate(lines) if (m := SECTION.match(line))]
    names = session_names()
    sections = []
    for k, (start, title) in enumerate(starts):
        stop = starts[k + 1][0] if k + 1 < len(starts) else len(lines) + 1
        found = [
            node.name
            for node in noxfile_tree().body
            if isinstance(node, ast.FunctionDef) and node.name in names and start < node.lineno < stop
        ]
        if found:
            sections.append((title, found))
    return sections


def page_sections(text: str) -> list[tuple[str, list[str]]]:
    """(title, its sessions in order) of every ``### <title>`` table under the page's "Every session"
    (`nox` itself, the default, aside)."""
    part = text.split("## Every session", 1)[1].split("\n## ", 1)[0]
    sections: list[tuple[str, list[str]]] = []
    for line in part.splitlines():
        if line.startswith("### "):
            sections.append((line.removeprefix("### "), []))
        elif line.startswith("| `") and sections:
            cell = line.split("|")[1]
            sections[-1][1].extend(n for n in re.findall(r"`(?:nox -s )?(\w+)", cell) if n != "nox")
    return sections


def test_the_sessions_page_has_the_noxfiles_sections_in_its_order() -> None:
    """The main job first; the noxfile's sections, and the sessions in each, in the page's order."""
    noxfile = noxfile_sections()
    page = page_sections((ROOT / "docs" / "sessions.md").read_text(encoding="utf-8"))
    assert noxfile[0] == ("the main job", ["train_dali", "train_torch", "evaluate", "slurm_smoke"])
    assert [(title.lower(), s) for title, s in page] == noxfile


NOX = shutil.which("nox") or shutil.which("nox", path=ROOT / ".venv" / "bin")  # the README's venv


@pytest.mark.skipif(
    NOX is None,
    reason="no nox on PATH nor in .venv (the README's set-up installs it: `python3 -m venv .venv`)",
)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lint", "--", "tests/loader"], "lint takes no arguments (got tests/loader)"),
        (["train_dali", "--", "--iters", "2", "--loader", "torch"], "train_dali does not take --loader"),
        (["train_torch", "--", "--loader=dali"], "train_torch does not take --loader=dali"),
        (["tests", "--", "tests/loader", "-m", "stack"], "tests does not take -m"),
        (
            ["rebase", "--", "main", "--train"],
            "--train vets a candidate without changing anything: give it with --check",
        ),
        (
            ["rebase", "--", "--check", "main", "--train", "--target", "mmdetection3d"],
            "rebase does not take --target: --train vets the StreamPETR series",
        ),
    ],
)
def test_session_refuses_an_argument_it_would_drop(args: list[str], message: str) -> None:
    done = subprocess.run([NOX, "-f", str(NOXFILE), "-s", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"aborted: {message}" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


SCRATCH_NOXFILE = """
import importlib.util, sys, time
import nox

spec = importlib.util.spec_from_file_location("project_noxfile", {noxfile!r})
project = importlib.util.module_from_spec(spec)
spec.loader.exec_module(project)
STEPS = "import time; print('step 1', flush=True); time.sleep({sleep}); print('step 2')"
BUILD = [sys.executable, "-c", STEPS]

@nox.session(python=False)
def beside(session):
    with project.env_built_beside(session, BUILD):
        session.log("the block runs")
        if session.posargs == ["fail"]:
            time.sleep(3)  # the build has started
            session.error("the block failed")
"""


@pytest.mark.parametrize("outcome", ["ok", "fail"])
def test_the_env_builds_beside_the_tiers_and_stops_when_they_fail(tmp_path: Path, outcome: str) -> None:
    """`nox -s tests` builds the OpenMMLab env in the background while the other tiers run: the build's
    lines are shown after the block, whose own output is not interleaved with them; a failing block
    stops the build (a 60-s one here) instead of waiting for it."""
    sleep = 1 if outcome == "ok" else 60
    (tmp_path / "noxfile.py").write_text(SCRATCH_NOXFILE.format(noxfile=str(NOXFILE), sleep=sleep))
    args = [
        NOX,
        "-f",
        str(tmp_path / "noxfile.py"),
        "-s",
        "beside",
        *(["--", "fail"] if outcome == "fail" else []),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=50, cwd=tmp_path)
    output = done.stdout + done.stderr
    block, first = output.index("the block runs"), output.index("(beside) step 1")
    assert block < first, output
    if outcome == "ok":
        assert done.returncode == 0 and "(beside) step 2" in output and "beside the tiers: exit 0" in output
    else:
        assert done.returncode == 1 and "(beside) step 2" not in output, output
        assert f"beside the tiers: exit -{signal.SIGTERM.value}" in output, output
