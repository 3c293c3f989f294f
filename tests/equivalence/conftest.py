"""The helper modules of other test folders that the equivalence tests use: the overlaytool tests'
small project (tests/overlaytool), for the hermetic tests of which configs a sweep finds in a fork's
layout, and the loader tests' tiny data set (tests/loader), for the comparator's image check."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "overlaytool"), str(TESTS / "loader")]
