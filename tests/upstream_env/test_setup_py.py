"""The setup.py edit for Python >= 3.13: `get_version()` in the exact forms of mmcv-full 1.6.0 and
mmdet3d v1.0.0rc6 reads its version after the edit; any other text is refused by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from upstream_env import EnvBuildError
from upstream_env.setup_py import read_version_in_globals

MMCV_FORM = """
version_file = 'pkg/version.py'
def get_version():
    with open(version_file, encoding='utf-8') as f:
        exec(compile(f.read(), version_file, 'exec'))
    return locals()['__version__']
print(get_version())
"""
MMDET3D_FORM = """
version_file = 'pkg/version.py'
def get_version():
    with open(version_file, 'r') as f:
        exec(compile(f.read(), version_file, 'exec'))
    import sys

    # return short version for sdist
    if 'sdist' in sys.argv or 'bdist_wheel' in sys.argv:
        return locals()['short_version']
    else:
        return locals()['__version__']
print(get_version())
"""


@pytest.mark.parametrize("form", [MMCV_FORM, MMDET3D_FORM], ids=["mmcv", "mmdet3d"])
def test_the_edited_get_version_reads_the_version(tmp_path: Path, form: str) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "version.py").write_text("__version__ = '1.6.0'\nshort_version = '1.6'\n")
    setup_py = tmp_path / "setup.py"
    setup_py.write_text(form)
    read_version_in_globals(setup_py)
    assert "locals()" not in setup_py.read_text()
    run = subprocess.run([sys.executable, "setup.py"], cwd=tmp_path, capture_output=True, text=True)
    assert (run.returncode, run.stdout.strip()) == (0, "1.6.0"), run.stderr


def test_an_unknown_form_is_refused_naming_the_file(tmp_path: Path) -> None:
    setup_py = tmp_path / "setup.py"
    setup_py.write_text("from pkg import __version__\n")
    with pytest.raises(EnvBuildError, match=r"setup\.py: get_version\(\) is not the exec/locals\(\) form"):
        read_version_in_globals(setup_py)
