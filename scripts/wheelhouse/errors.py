"""The wheelhouse's one error, in a module of its own: every module imports it from here, and the
package's face only hands it on (no module reaches back up into the package's ``__init__``)."""

from __future__ import annotations


class WheelhouseError(Exception):
    """A user-facing failure naming the file, package or step."""
