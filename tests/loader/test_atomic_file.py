"""The loader package's one writer: a file replaced whole (streamed, or written by name by another
writer such as mmcv's), a link replaced whole, nothing left behind by a failure, and a name taken
at its temporary file refused with that file untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dali_streampetr.atomic_file import replace_file


def test_a_file_is_replaced_whole_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    path, steps = tmp_path / "f.bin", []
    path.write_bytes(b"old")
    replace_file(path, lambda f: f.write(b"new"), checkpoint=steps.append)
    assert path.read_bytes() == b"new" and steps == ["written", "published"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_a_writer_that_takes_a_file_name_writes_into_the_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "iter_1.pth"

    def by_name(f) -> None:
        assert Path(f.name) == tmp_path / ".iter_1.pth.partial"
        with open(f.name, "wb") as other:  # noqa: PTH123 - as mmcv's save_checkpoint does
            other.write(b"checkpoint")

    replace_file(path, by_name, tmp_name=".iter_1.pth.partial")
    assert path.read_bytes() == b"checkpoint"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iter_1.pth"]


def test_a_link_is_replaced_whole(tmp_path: Path) -> None:
    latest = tmp_path / "latest.pth"
    latest.symlink_to("iter_1.pth")
    replace_file(latest, link="iter_2.pth", tmp_name=".latest.pth.partial")
    assert os.readlink(latest) == "iter_2.pth"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pth"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def torn(f) -> None:
        f.write(b"ne")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_file(path, torn)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_a_link_planted_at_the_temporary_name_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target, path = tmp_path / "elsewhere", tmp_path / "f.bin"
    target.write_bytes(b"theirs")
    (tmp_path / f".f.bin.tmp-{os.getpid()}").symlink_to(target)
    with pytest.raises(FileExistsError):
        replace_file(path, lambda f: f.write(b"mine"))
    assert target.read_bytes() == b"theirs" and not path.exists()
    assert (tmp_path / f".f.bin.tmp-{os.getpid()}").is_symlink()
