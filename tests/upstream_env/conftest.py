"""The env builder's tests share the stack runs' helper (`tests/upstream/stack_runs.py`: the env's
python, the applied checkout) with the end-to-end stack tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "upstream"))
