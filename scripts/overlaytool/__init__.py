"""Overlay tooling: pins, the local upstream cache, the patch series, apply/refresh/rebase.

Stdlib only (Python >= 3.11), so it runs before any environment is built.
"""

from __future__ import annotations


class OverlayError(Exception):
    """A user-facing failure: the message says what is wrong and how to get out."""
