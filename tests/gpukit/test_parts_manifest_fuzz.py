"""The GPU kit's manifest is read back on another machine: a name in it that leaves the kit's
folders (``../``, an absolute path, a separator) is refused by name before anything is written,
and any edit of a manifest ends in a named ``CheckError`` or a manifest whose every name is a plain
file name; never another exception."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from pathlib import Path

import pytest
from gpukit.parts import FORMAT, MANIFEST, load_manifest, reassemble
from gpukit.steps import CheckError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BODY = b"wheel bytes\n"
SHA = hashlib.sha256(BODY).hexdigest()
GOOD = {
    "format": FORMAT, "dali_cuda": 12, "parts_dir": "parts", "source": "sources.tar.gz",
    "locks": {"cp311": "gpu-kit-cp311.txt"},
    "files": [{"name": "w-1-py3-none-any.whl", "size": len(BODY), "sha256": SHA,
               "parts": [{"name": "w-1-py3-none-any.whl.000", "size": len(BODY), "sha256": SHA}]}],
}  # fmt: skip
ESCAPES = ["../outside", "/etc/passwd", "a/b", "..", ".", "", "a\\b", "x\0y", "..\\..\\x"]
PLACES = [
    ("parts_dir",),
    ("source",),
    ("locks", "cp311"),
    ("files", 0, "name"),
    ("files", 0, "parts", 0, "name"),
]
FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


def write_kit(tmp_path: Path, manifest: object) -> Path:
    kit = tmp_path / "kit"
    (kit / "parts").mkdir(parents=True, exist_ok=True)
    (kit / "parts" / "w-1-py3-none-any.whl.000").write_bytes(BODY)
    (kit / MANIFEST).write_text(json.dumps(manifest))
    return kit


def _set(manifest: dict, place: tuple, value: object) -> dict:
    edited = copy.deepcopy(manifest)
    node = edited
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    return edited


def test_the_good_manifest_loads_and_reassembles(tmp_path: Path) -> None:
    kit = write_kit(tmp_path, GOOD)
    out = reassemble(kit, load_manifest(kit), tmp_path / "wheels", tmp_path / "other")
    assert [p.read_bytes() for p in out] == [BODY]


@pytest.mark.parametrize("place", PLACES, ids=lambda place: ".".join(map(str, place)))
@pytest.mark.parametrize("name", ESCAPES)
def test_a_name_leaving_the_kit_is_refused_by_name(tmp_path: Path, place: tuple, name: str) -> None:
    kit = write_kit(tmp_path, _set(GOOD, place, name))
    with pytest.raises(
        CheckError, match=rf"{kit / MANIFEST}: .*{place[-1] if isinstance(place[-1], str) else ''}"
    ):
        load_manifest(kit)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kit"]  # nothing written anywhere


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.text(max_size=6) | st.sampled_from(ESCAPES),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FIELDS = [*PLACES, ("format",), ("dali_cuda",), ("locks",), ("files",), ("files", 0), ("files", 0, "size"),
          ("files", 0, "sha256"), ("files", 0, "parts"), ("files", 0, "parts", 0, "size")]  # fmt: skip


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(FIELDS), JSON), min_size=1, max_size=3))
def test_any_edit_is_refused_by_name_or_keeps_every_name_plain(tmp_path: Path, edits) -> None:
    manifest: object = GOOD
    for place, value in edits:
        try:
            manifest = _set(manifest, place, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed the container: the edit does not apply
    kit = write_kit(tmp_path, manifest)
    try:
        loaded = load_manifest(kit)
    except CheckError as exc:
        assert str(kit / MANIFEST) in str(exc)
        return
    names = [loaded["parts_dir"], *loaded.get("locks", {}).values()]
    names += [e["name"] for e in loaded["files"]] + [p["name"] for e in loaded["files"] for p in e["parts"]]
    assert all(n and "/" not in n and "\\" not in n and n not in (".", "..") for n in names)
    with contextlib.suppress(CheckError):  # a part's size or hash edited: refused by name
        reassemble(kit, loaded, tmp_path / "wheels", tmp_path / "other")
    assert {p.name for p in tmp_path.iterdir()} <= {"kit", "wheels", "other"}
