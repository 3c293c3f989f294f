"""The overlaytool tests' small project (tests/overlaytool) for the hermetic tests of which configs a sweep
finds in a fork's layout."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "overlaytool"))
