"""Locks and SHA256SUMS of a wheelhouse: written, read back, checked against the pins."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from upstream_env import read_pins
from wheelhouse import WheelhouseError
from wheelhouse.requirement_locks import (
    Locked,
    check_pins,
    read_lock,
    verify_sums,
    write_lock,
    write_sums,
)


def wheel(folder: Path, name: str, body: bytes) -> Path:
    path = folder / name
    path.write_bytes(body)
    return path


def test_lock_lines_carry_each_files_sha256(tmp_path: Path) -> None:
    wheel(tmp_path, "six-1.17.0-py2.py3-none-any.whl", b"six")
    wheel(tmp_path, "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", b"torch")
    entries = [
        Locked("torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"),
        Locked("six", "1.17.0", "six-1.17.0-py2.py3-none-any.whl"),
    ]
    lock = write_lock(tmp_path / "locks" / "x.txt", entries, tmp_path, "header\nsecond line")
    assert lock.read_text().startswith("# header\n# second line\n")
    assert read_lock(lock) == {
        "torch": ("2.13.0+cpu", hashlib.sha256(b"torch").hexdigest()),
        "six": ("1.17.0", hashlib.sha256(b"six").hexdigest()),
    }
    assert read_pins(lock) == {"torch": "2.13.0+cpu", "six": "1.17.0"}  # a lock's pins, its hashes aside


def test_pins_are_checked_without_local_labels(tmp_path: Path) -> None:
    constraints = tmp_path / "c.txt"
    constraints.write_text("# pins\nTorch==2.13.0\nPyYAML==6.0.4  # comment\nnumpy==1.26.4\n")
    assert read_pins(constraints) == {"torch": "2.13.0", "pyyaml": "6.0.4", "numpy": "1.26.4"}
    check_pins(
        [Locked("torch", "2.13.0+cpu", "t.whl"), Locked("other", "1", "o.whl")], read_pins(constraints), "c"
    )
    with pytest.raises(WheelhouseError, match=r"numpy 2\.0\.0 \(pinned 1\.26\.4\)"):
        check_pins([Locked("numpy", "2.0.0", "n.whl")], read_pins(constraints), "c")


def test_a_changed_or_missing_file_is_named(tmp_path: Path) -> None:
    a = wheel(tmp_path, "a-1-py3-none-any.whl", b"a")
    b = wheel(tmp_path, "b-1-py3-none-any.whl", b"b")
    write_sums(tmp_path)
    assert verify_sums(tmp_path) == 2
    a.write_bytes(b"A")
    with pytest.raises(WheelhouseError, match=r"a-1-py3-none-any\.whl: sha256 differs"):
        verify_sums(tmp_path)
    a.write_bytes(b"a")
    b.unlink()
    with pytest.raises(WheelhouseError, match=r"b-1-py3-none-any\.whl: listed in SHA256SUMS but missing"):
        verify_sums(tmp_path)
    with pytest.raises(WheelhouseError, match="has no SHA256SUMS"):
        verify_sums(tmp_path / "locks")
