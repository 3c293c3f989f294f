"""`nox -s rebase -- ... --train` refuses what it cannot vet before building anything."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NOXFILE = Path(__file__).resolve().parents[2] / "noxfile.py"
NOX = shutil.which("nox")


@pytest.mark.skipif(
    NOX is None, reason="nox is not on PATH (`python -m pip install -r requirements/nox.txt`)"
)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["main", "--train"], "--train vets a candidate without changing anything: give it with --check"),
        (
            ["--check", "main", "--train", "--target", "mmdetection3d"],
            "rebase does not take --target: --train vets the StreamPETR series",
        ),
    ],
)
def test_rebase_train_refuses_what_it_cannot_vet(args: list[str], message: str) -> None:
    assert NOX is not None
    done = subprocess.run(
        [NOX, "-f", str(NOXFILE), "-s", "rebase", "--", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert f"aborted: {message}" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
