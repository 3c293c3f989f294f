"""`upstream_run train` (`nox -s train_dali`) runs tools/train.py where the applied checkout keeps
it: at its root, or under `src/` in a fork that moved its sources there (`overlay_moves`); an
unapplied checkout is named with `nox -s apply`. The runner runs from a copy of scripts/ in a
throw-away project whose pinned upstream holds a tools/train.py that records how it was started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tooling_repos import SCRIPTS, Project, pin_layout

RECORDER = """import json, os, sys
with open(os.environ["RUN_RECORD"], "w") as f:
    json.dump({"cwd": os.getcwd(), "argv": sys.argv, "path": os.environ.get("PYTHONPATH")}, f)
"""


@pytest.mark.parametrize("prefix", ["", "src/"], ids=["root", "src"])
def test_train_runs_tools_train_py_where_the_checkout_keeps_it(project: Project, tmp_path: Path, prefix: str):
    files = {f"{prefix}projects/mmdet3d_plugin/__init__.py": "", f"{prefix}tools/train.py": RECORDER}
    pin_layout(project, files, '[target.overlay_moves]\nprojects = "src/projects"\n' if prefix else "")
    shutil.copytree(SCRIPTS, project.root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    data, record = tmp_path / "data", tmp_path / "run.json"
    data.mkdir()
    (data / "nuscenes2d_temporal_infos_train.pkl").write_bytes(b"")
    cmd = [sys.executable, "-m", "upstream_run", "train", "--data-root", str(data),
           "--python", sys.executable, "--work-dir", str(tmp_path / "work")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(project.root / "scripts"), "RUN_RECORD": str(record)}

    unapplied = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert unapplied.returncode == 2 and not record.exists(), unapplied.stderr
    assert "is not an applied StreamPETR checkout; run `nox -s apply`" in unapplied.stderr

    assert project.run("apply") == 0
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert record.is_file(), proc.stderr[-3000:]
    ran = json.loads(record.read_text())
    tree = project.checkout / prefix if prefix else project.checkout
    assert (ran["cwd"], ran["path"], ran["argv"][0]) == (str(tree), str(tree), "tools/train.py")
    assert ran["argv"][1] == "projects/configs/cpu/stream_petr_r50_cpu_smoke.py"  # relative to the code root
    assert f"$ (cd upstream/StreamPETR{'/src' if prefix else ''} && tools/train.py" in proc.stderr
