"""The frame store trusts nothing it reads back: every byte that decides what is read is under its
digest, every array is checked against the file, and a folder or file another user could have
written is refused by name unless the folder is declared shared."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from bit_for_bit import assert_same_frames
from dali_streampetr.frames.frame_errors import StoreDamaged, StoreUntrusted
from dali_streampetr.frames.store import load_frames, read_frames, store_key, store_path
from dali_streampetr.frames.store_build import build_store
from dali_streampetr.frames.store_file import (
    ALIGN,
    MAGIC,
    PREFIX,
    SHARED_ENV,
    open_store,
    write_store,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loader_data import CLASSES, own_infos

ARRAYS = {
    "floats": np.arange(10, dtype=np.float32),
    "boxes": np.arange(24, dtype=np.int64).reshape(3, 8),
    "flags": np.array([True, False, True]),
    "empty": np.zeros((0, 4), np.float64),
    "bytes": (np.arange(5000) % 251).astype(np.uint8),
}
KEY = {"format": 2, "info_sha256": "ab" * 32, "class_names": ["car", "truck"]}
META = {"n_cams": 6, "empty_shapes": [[0], [0, 4]], "frames": 3}
FUZZ = settings(
    max_examples=150, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


class Original(bytes):
    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"<the fixture store, {len(self)} bytes>"


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Original:
    path = tmp_path_factory.mktemp("store") / "good.frames"
    write_store(path, ARRAYS, KEY, META)
    return Original(path.read_bytes())


def split(raw: bytes) -> tuple[dict, bytes]:
    """(header, data) of a store file's bytes (the layout in store_file's module doc)."""
    length = int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 8], "little")
    start = -(-(PREFIX + length) // ALIGN) * ALIGN
    return json.loads(raw[PREFIX : PREFIX + length]), raw[start:]


def join(header: dict, data: bytes, *, digest: bytes | None) -> bytes:
    """A store file of ``header`` and ``data``; ``digest=None``: the true digest (a forger's file)."""
    text = json.dumps(header, sort_keys=True).encode()
    pad = b"\0" * (-(PREFIX + len(text)) % ALIGN)
    covered = len(text).to_bytes(8, "little") + text + pad + data
    return MAGIC + covered[:8] + (digest or hashlib.sha256(covered).digest()) + covered[8:]


def same_store(arrays: dict, meta: dict) -> bool:
    return (
        meta == META
        and arrays.keys() == ARRAYS.keys()
        and all(arrays[k].dtype == ARRAYS[k].dtype and np.array_equal(arrays[k], ARRAYS[k]) for k in ARRAYS)
    )


def test_the_fixture_store_opens_with_its_values(original, tmp_path):
    path = tmp_path / "s.frames"
    path.write_bytes(original)
    assert same_store(*open_store(path, KEY))
    path.write_bytes(join(*split(original), digest=None))  # the test's writer agrees with the module's
    assert same_store(*open_store(path, KEY))


@FUZZ
@given(flips=st.dictionaries(st.integers(0, 10**6), st.integers(1, 255), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10**6)))  # fmt: skip
def test_byte_flips_anywhere_are_damage(original, tmp_path, flips, cut):
    """Any flipped byte (magic, length, digest, header, padding, data), or a file cut short: refused."""
    raw = bytearray(original)
    for position, mask in flips.items():
        raw[position % len(raw)] ^= mask
    if cut is not None:
        raw = raw[: cut % len(raw)]
    path = tmp_path / "s.frames"
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreDamaged):
        open_store(path, KEY)


FIELDS = [
    ("data_bytes",),
    ("key", "format"),
    ("key", "class_names"),
    ("meta", "n_cams"),
    ("meta", "empty_shapes"),
]
FIELDS += [("arrays", name, field) for name in ARRAYS for field in ("dtype", "shape", "offset")]
VALUES = st.one_of(
    st.integers(-2, 3 * ALIGN), st.sampled_from([0, 4096, 8192, 10**12, 2**63]),
    st.sampled_from(["<f4", "<f8", "<i8", "|u1", "|b1", ">f4", "f4", "|O", "|O8", "<U4", "|V8", "<M8[s]",
                     "(2,)<f4", "[('a', '<f4')]", "object", "garbage"]),
    st.lists(st.integers(-1, 30), max_size=3), st.none(), st.booleans(), st.text(max_size=4), st.floats(),
)  # fmt: skip


def _edit(header: dict, field: tuple, value) -> None:
    node = header
    for part in field[:-1]:
        node = node[part]
    if value is ...:
        node.pop(field[-1], None)
    else:
        node[field[-1]] = value


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(FIELDS), st.one_of(VALUES, st.just(...))), min_size=1,
                      max_size=3), forge=st.booleans())  # fmt: skip
def test_field_edits_are_damage_and_even_a_forged_digest_maps_nothing_outside_the_data(
    original, tmp_path, edits, forge
):
    """Edits of the header's fields (or their removal): with the old digest, refused unless the
    header is unchanged; with a recomputed digest (a writer who knows the format), refused or opened
    with every array of a numeric dtype inside the data and none overlapping. Never another error."""
    header, data = split(original)
    unchanged = json.dumps(header, sort_keys=True)
    for field, value in edits:
        _edit(header, field, value)
    path = tmp_path / "s.frames"
    path.write_bytes(join(header, data, digest=None if forge else original[len(MAGIC) + 8 : PREFIX]))
    try:
        arrays, meta = open_store(path, KEY)
    except StoreDamaged:
        return
    if not forge or json.dumps(header, sort_keys=True) == unchanged:
        assert json.dumps(header, sort_keys=True) == unchanged and same_store(arrays, meta)
        return
    spans = []
    for arr in arrays.values():
        assert arr.dtype.kind in "biuf" and not arr.flags.writeable
        first = arr.__array_interface__["data"][0]
        spans.append((first, first + arr.nbytes))
    base = min((s for s, e in spans if e > s), default=0)
    assert all(e - base <= len(data) for _, e in spans)
    ordered = sorted(s for s in spans if s[1] > s[0])
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:], strict=False))


def _header_edit(field: tuple, value, forge: bool):
    def damage(path: Path) -> None:
        raw = path.read_bytes()
        header, data = split(raw)
        new = value
        if callable(value):  # of the value there
            node = header
            for part in field:
                node = node[part]
            new = value(node)
        _edit(header, field, new)
        path.write_bytes(join(header, data, digest=None if forge else raw[len(MAGIC) + 8 : PREFIX]))

    return damage


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (
            _header_edit(("arrays", "depths", "shape"), lambda s: [s[0] + 8], False),
            "checksum",
        ),  # [10] -> [18]
        (_header_edit(("arrays", "depths", "offset"), 0, False), "overlaps"),  # checked before the digest
        (_header_edit(("arrays", "depths", "shape"), [99999], True), "not inside the"),
        (_header_edit(("arrays", "depths", "dtype"), "|O8", True), "not one of the plain numeric kinds"),
        (_header_edit(("arrays", "depths", "offset"), 0, True), "overlaps"),
        (_header_edit(("meta", "frames"), 7, False), "checksum"),
    ],
    ids=[
        "shape-longer",
        "offset-0",
        "shape-past-the-data-forged",
        "object-dtype-forged",
        "overlap-forged",
        "meta",
    ],
)
def test_an_edited_header_is_rebuilt_with_one_warning(tiny_root, tmp_path, caplog, damage, reason):
    ann = own_infos(tiny_root, tmp_path)
    path = load_frames(ann, tiny_root, CLASSES).source[0]
    damage(path)
    with caplog.at_level(logging.INFO, logger="dali_streampetr"):
        frames = load_frames(ann, tiny_root, CLASSES)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and reason in warnings[0] and str(path) in warnings[0], warnings
    assert_same_frames(read_frames(ann, tiny_root, CLASSES), frames)


# --- shared folders -------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    stores = tmp_path / "stores"
    monkeypatch.setenv("STREAMPETR_DALI_FRAME_STORES", str(stores))
    monkeypatch.delenv(SHARED_ENV, raising=False)
    return stores


def test_a_folder_writable_by_group_or_others_is_refused_by_name_unless_declared_shared(
    tiny_root, tmp_path, folder, monkeypatch
):
    ann = own_infos(tiny_root, tmp_path)
    folder.mkdir(mode=0o700)
    for mode in (0o770, 0o757):
        folder.chmod(mode)
        with pytest.raises(
            StoreUntrusted, match=rf"folder {folder} is writable by group or others.*{SHARED_ENV}=1"
        ):
            load_frames(ann, tiny_root, CLASSES)
        assert not list(folder.iterdir())  # refused before anything is written there
    monkeypatch.setenv(SHARED_ENV, "1")
    frames = load_frames(ann, tiny_root, CLASSES)
    assert frames.source[0].parent == folder
    assert_same_frames(read_frames(ann, tiny_root, CLASSES), frames)


def test_a_folder_the_builder_creates_is_its_users_alone(tiny_root, tmp_path, folder):
    old = os.umask(0o002)  # a cluster's usual umask: group-writable by default
    try:
        load_frames(own_infos(tiny_root, tmp_path), tiny_root, CLASSES)
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o777 == 0o755
    assert all(p.stat().st_mode & 0o022 == 0 for p in folder.iterdir())


def test_a_store_file_writable_by_others_is_refused_by_name(tiny_root, tmp_path, folder):
    ann = own_infos(tiny_root, tmp_path)
    path = load_frames(ann, tiny_root, CLASSES).source[0]
    path.chmod(0o664)
    with pytest.raises(StoreUntrusted, match=rf"file {path} is writable by group or others \(mode 0664\)"):
        load_frames(ann, tiny_root, CLASSES)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_store_owned_by_another_user_is_refused_unless_declared_shared(
    tiny_root, tmp_path, folder, monkeypatch
):
    ann = own_infos(tiny_root, tmp_path)
    path = load_frames(ann, tiny_root, CLASSES).source[0]
    os.chown(path, 4242, -1)
    with pytest.raises(StoreUntrusted, match=rf"file {path} is owned by uid 4242, not by this user"):
        load_frames(ann, tiny_root, CLASSES)
    monkeypatch.setenv(SHARED_ENV, "1")
    assert load_frames(ann, tiny_root, CLASSES).source[0] == path


def _victim(tmp_path: Path) -> tuple[Path, bytes, int]:
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"the user's own file\n")
    return victim, victim.read_bytes(), victim.stat().st_mtime_ns


def test_a_symlink_planted_at_the_lock_name_is_refused_and_its_target_untouched(tiny_root, tmp_path, folder):
    ann = own_infos(tiny_root, tmp_path)
    folder.mkdir(mode=0o755)
    victim, content, mtime = _victim(tmp_path)
    key = store_key(ann, CLASSES, False)
    lock = store_path(folder, key).with_suffix(".lock")
    lock.symlink_to(victim)
    with pytest.raises(StoreUntrusted, match=rf"lock file {lock} is a symbolic link"):
        load_frames(ann, tiny_root, CLASSES)
    with pytest.raises(StoreUntrusted, match="is a symbolic link"):
        build_store(ann, CLASSES, False, store_path(folder, key), key)
    assert victim.read_bytes() == content and victim.stat().st_mtime_ns == mtime
    assert not store_path(folder, key).exists()


def test_a_symlink_planted_at_the_temporary_name_is_refused_and_its_target_untouched(tmp_path):
    victim, content, mtime = _victim(tmp_path)
    path = tmp_path / "s.frames"
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.symlink_to(victim)
    with pytest.raises(StoreUntrusted, match=rf"temporary file {tmp} exists already"):
        write_store(path, ARRAYS, KEY, META)
    assert victim.read_bytes() == content and victim.stat().st_mtime_ns == mtime and not path.exists()


def test_a_symlink_at_the_store_name_is_refused(tmp_path, original):
    real = tmp_path / "elsewhere.frames"
    real.write_bytes(original)
    link = tmp_path / "s.frames"
    link.symlink_to(real)
    with pytest.raises(StoreUntrusted, match=rf"file {link} is a symbolic link"):
        open_store(link, KEY)


def test_a_lock_file_with_a_second_link_is_refused(tiny_root, tmp_path, folder):
    """A hard link at the lock name would let the lock's pid write reach another file."""
    ann = own_infos(tiny_root, tmp_path)
    folder.mkdir(mode=0o755)
    victim, content, _ = _victim(tmp_path)
    key = store_key(ann, CLASSES, False)
    os.link(victim, store_path(folder, key).with_suffix(".lock"))
    with pytest.raises(StoreUntrusted, match="not a plain file with one link"):
        build_store(ann, CLASSES, False, store_path(folder, key), key)
    assert victim.read_bytes() == content


def test_pickled_frames_carry_no_trust_of_their_own(tiny_root, tmp_path, folder):
    """A worker reopening the store (the unpickled frames) checks it again: a file changed since the
    loader mapped it is refused there too."""
    ann = own_infos(tiny_root, tmp_path)
    frames = load_frames(ann, tiny_root, CLASSES)
    shipped = pickle.dumps(frames)
    frames.source[0].chmod(0o666)
    with pytest.raises(StoreUntrusted):
        pickle.loads(shipped)
