"""The NumPy shim of the upstream env, run in a fresh interpreter as its `.pth` file runs it: the
removed names exist once numpy is imported, and `in1d` answers as NumPy's own did (flattened)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SHIM_DIR = Path(__file__).resolve().parents[2] / "scripts" / "upstream_env"

PROGRAM = """
import _streampetr_numpy_compat  # what the .pth line does, before numpy is imported
import numpy as np
assert np.int is int and np.float is float
assert np.dtype(np.bool) == bool and np.dtype(np.long) == int  # numpy 2's own; the shim adds neither
a = np.array([[1, 5], [2, 7]])
assert np.in1d(a, [5, 2]).tolist() == [False, True, True, False]  # 1-D, as numpy 1 gave
assert np.in1d(a, [5, 2], invert=True).tolist() == [True, False, False, True]
assert np.isin(a, [5, 2]).shape == (2, 2)  # numpy's own isin is untouched
print("ok")
"""


def test_the_shim_adds_the_removed_names_on_first_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], env={"PYTHONPATH": str(SHIM_DIR)}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_without_the_shim_numpy_lacks_them() -> None:
    """What the shim is for: this env's numpy has none of the names mmdet3d rc6 uses."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import numpy as np; print([hasattr(np, n) for n in ('int', 'float', 'in1d')])",
        ],
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "[False, False, False]", out.stderr
