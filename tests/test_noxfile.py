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
STEPS = "import sys, time; print('step 1', flush=True); time.sleep({sleep}); print('step 2'); exit({code})"
FIRST, SECOND = [sys.executable, "-c", STEPS], [sys.executable, "-c", "print('second command')"]

@nox.session(python=False)
def beside(session):
    with project.beside(session, "two commands", [project.command(FIRST), project.command(SECOND)]):
        session.log("the block runs")
        if session.posargs == ["fail"]:
            time.sleep(3)  # the first command has started
            session.error("the block failed")
    session.log("after the block")
"""


@pytest.mark.parametrize("outcome", ["ok", "block fails", "command fails"])
def test_commands_run_beside_the_tiers_and_stop_when_they_fail(tmp_path: Path, outcome: str) -> None:
    """`nox -s tests` builds the OpenMMLab env in the background while the hermetic tier runs, and runs
    the other Pythons' sets while the stack tier runs: their lines are shown after the block, whose own
    output is not interleaved with them; a failing block stops the command running (a 60-s one here)
    and starts no other; a failing command fails the session after the block, the next not run."""
    sleep, code = {"ok": (1, 0), "block fails": (60, 0), "command fails": (1, 3)}[outcome]
    noxfile = SCRATCH_NOXFILE.format(noxfile=str(NOXFILE), sleep=sleep, code=code)
    (tmp_path / "noxfile.py").write_text(noxfile)
    args = [NOX, "-f", str(tmp_path / "noxfile.py"), "-s", "beside"]
    args += ["--", "fail"] if outcome == "block fails" else []
    done = subprocess.run(args, capture_output=True, text=True, timeout=50, cwd=tmp_path)
    output = done.stdout + done.stderr
    block, first = output.index("the block runs"), output.index("(beside) step 1")
    assert block < first, output
    if outcome == "ok":
        assert done.returncode == 0 and "(beside) second command" in output, output
        assert output.index("(beside) step 2") < output.index("after the block"), output
    elif outcome == "block fails":
        assert done.returncode == 1 and "(beside) step 2" not in output, output
        assert f"(beside) exit -{signal.SIGTERM.value}" in output, output
        assert "second command" not in output, output
    else:
        assert done.returncode == 1 and "(beside) step 2" in output and "after the block" not in output
        assert "beside the tiers, failed: " in output and "(exit 3)" in output, output
        assert "second command" not in output, output
