"""The GitHub Actions workflows pass `actionlint` and `zizmor` (offline, pedantic) without a finding,
and both tools fail a workflow with an unpinned action and an event field injected into `run:`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
DEFECTIVE = """\
name: greet
on:
  issues:
permissions:
  contents: read
jobs:
  greet:
    name: greet the issue
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - run: echo "${{ github.event.issue.title }}"
"""


def tool(name: str) -> str:
    """The tool from the hermetic env (requirements/hermetic.txt pins both), else from PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: `nox -s lint` builds the hermetic env that pins it")
    return found


def actionlint(folder: Path) -> subprocess.CompletedProcess:
    files = sorted(str(p) for p in folder.glob("*.y*ml"))
    return subprocess.run(
        [tool("actionlint"), "-no-color", *files], capture_output=True, text=True, timeout=120
    )


def zizmor(folder: Path) -> tuple[int, list[dict]]:
    cmd = [tool("zizmor"), "--offline", "--no-config", "--no-progress", "--persona", "pedantic"]
    done = subprocess.run(
        [*cmd, "--format", "json", str(folder)], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip(), f"zizmor printed no JSON: {done.stderr[-2000:]}"
    return done.returncode, json.loads(done.stdout)


def test_the_workflows_have_no_actionlint_finding() -> None:
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["tests.yml", "watch.yml"]
    done = actionlint(WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflows_have_no_zizmor_finding() -> None:
    code, findings = zizmor(WORKFLOWS)
    assert findings == [] and code == 0, json.dumps(findings, indent=1)[:4000]


def test_both_fail_an_unpinned_action_and_an_injected_event_field(tmp_path: Path) -> None:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "greet.yml").write_text(DEFECTIVE)
    done = actionlint(folder)
    assert done.returncode != 0
    assert '"github.event.issue.title" is potentially untrusted' in done.stdout
    code, findings = zizmor(folder)
    assert code != 0
    assert {"template-injection", "unpinned-uses"} <= {f["ident"] for f in findings}
