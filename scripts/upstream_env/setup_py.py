"""Source edits that let the pinned setup.py files of mmcv-full and mmdet3d run on Python >= 3.13.

Both read their version with `exec(compile(...))` inside `get_version()` and then look the name up
in `locals()`. Since Python 3.13 (PEP 667) a function's `exec` writes into a snapshot that a later
`locals()` does not see: `KeyError: '__version__'`. The edit runs that `exec` in the module's
globals and reads the name there; the version read, and so the wheel, is the same on every Python.
"""

from __future__ import annotations

from pathlib import Path

from .errors import EnvBuildError

_EXEC = "exec(compile(f.read(), version_file, 'exec'))"


def read_version_in_globals(setup_py: Path) -> None:
    """Rewrite `setup_py`'s `get_version()` as above; a named error if its text is not the known one."""
    text = setup_py.read_text()
    if text.count(_EXEC) != 1 or "locals()['" not in text:
        raise EnvBuildError(f"{setup_py}: get_version() is not the exec/locals() form this edit knows")
    text = text.replace(_EXEC, _EXEC[:-1] + ", globals())").replace("locals()['", "globals()['")
    setup_py.write_text(text)
