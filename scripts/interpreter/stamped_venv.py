"""A venv behind a stamp: made with a base Python, its packages installed, the stamp written last
(whole, by ``overlaytool.replace_file``); current while the stamp holds the same key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from .choice import python_version, venv_minor
from .installer import install_command

Run = Callable[[list[str]], object]  # runs a command, raising on a non-zero exit


def ensure_venv(
    env: Path,
    base: str,
    key: str,
    installs: Sequence[Sequence[object]],
    run: Run,
    *,
    stamp: str,
    minor: str | None = None,
) -> Path:
    """``env``'s python: as it is when its ``stamp`` file holds ``key`` and ``base``'s version
    (:func:`.choice.python_version`), else (re)made with ``base`` (``--clear``; with ``minor``, one made
    by that Python minor is kept and installed over),
    each of ``installs`` installed in order (:func:`install_command`), and the stamp written last, so
    a build that stops half-way is redone."""
    python, stamp_file = env / "bin" / "python", env / stamp
    key = f"{key}\npython {python_version(Path(base))}\n"
    if python.exists() and stamp_file.is_file() and stamp_file.read_text() == key:
        return python
    if minor is None or not python.exists() or venv_minor(env) != minor:
        run([base, "-m", "venv", "--clear", str(env)])
    for args in installs:
        run(install_command(python, *args))
    from overlaytool import replace_file  # here: the noxfile imports this package first, on any Python

    replace_file(stamp_file, key)
    return python
