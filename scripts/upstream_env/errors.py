"""The env builder's one error, in a module of its own: every module imports it from here, and the
package's face only hands it on (no module reaches back up into the package's ``__init__``)."""

from __future__ import annotations


class EnvBuildError(Exception):
    """A user-facing failure: the message says which step failed and where the full log is."""
