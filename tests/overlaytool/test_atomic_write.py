"""The one atomic writer: exact modes whatever the umask, symlinks, the old content kept on a failure
or a kill (whose temporary file is found and removed, and only that file's), and concurrent writers
that never publish a mixed file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from overlaytool.atomic_write import leftovers, remove_leftovers, replace_file
from tooling_repos import SCRIPTS

WRITER = """
import sys
from pathlib import Path
from overlaytool.atomic_write import replace_file
path, byte, times = Path(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
for _ in range(times):
    replace_file(path, byte * 1_000_000, step="test")
"""


def run_writer(path: Path, byte: str, times: int, **env: str) -> subprocess.Popen:
    full = {**os.environ, "PYTHONPATH": str(SCRIPTS), **env}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), byte, str(times)], env=full)


@pytest.fixture
def umask_077():
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_modes_are_exact_whatever_the_umask(tmp_path: Path, umask_077) -> None:
    replace_file(tmp_path / "run.sh", b"#!/bin/sh\n", mode=0o755)
    replace_file(tmp_path / "plain.txt", "text\n")
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "plain.txt").stat().st_mode & 0o777 == 0o600  # 0o666 less the umask
    assert (tmp_path / "plain.txt").read_bytes() == b"text\n"


def test_a_file_becomes_a_symlink_and_back(tmp_path: Path) -> None:
    path = tmp_path / "latest.py"
    replace_file(path, "old\n")
    replace_file(path, b"train.py", link=True)
    assert path.is_symlink() and os.readlink(path) == "train.py"
    replace_file(path, "new\n")
    assert not path.is_symlink() and path.read_text() == "new\n"


def test_a_failed_write_keeps_the_old_content_and_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").write_text("mine\n")
    with pytest.raises(OSError):
        replace_file(tmp_path / "taken", "a file where a folder is\n")
    assert (tmp_path / "taken" / "inside").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_a_kill_before_the_rename_keeps_the_old_content_and_its_leftover_is_found(tmp_path: Path) -> None:
    path = tmp_path / "model.patch"
    path.write_text("old\n")
    (tmp_path / "model.patch.orig").write_text("a neighbour\n")
    killed = run_writer(path, "n", 1, STREAMPETR_DALI_TEST_KILL_AT="test:tmp")
    assert killed.wait(timeout=60) == -9
    assert path.read_text() == "old\n"
    found = leftovers(tmp_path, "model.patch")
    assert [p.name for p in found] == [f".model.patch.{killed.pid}.streampetr-dali-tmp"]
    assert found[0].stat().st_size == 1_000_000  # written whole, not renamed
    assert leftovers(tmp_path, "model") == [] and leftovers(tmp_path) == found
    remove_leftovers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.patch", "model.patch.orig"]


def test_concurrent_writers_never_publish_a_mixed_file(tmp_path: Path) -> None:
    """Two processes replace one file 40 times each while it is read: every read is one writer's
    content whole (a temporary file shared by both would publish one's bytes over the other's)."""
    path = tmp_path / "summary.json"
    replace_file(path, b"a" * 1_000_000)
    writers = [run_writer(path, byte, 40) for byte in "ab"]
    seen = set()
    while any(w.poll() is None for w in writers):
        data = path.read_bytes()
        assert len(data) == 1_000_000 and data.count(data[:1]) == 1_000_000, "a mixed or short file"
        seen.add(data[:1])
    assert [w.wait() for w in writers] == [0, 0]
    assert seen <= {b"a", b"b"} and leftovers(tmp_path) == []
