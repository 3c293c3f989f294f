"""The info pickle's restricted unpickler runs no code from any input, and a malformed input is an
``InfoSchemaError`` naming the file: random bytes, a real info pickle (protocols 0-5) with bytes
flipped or cut, and the same with a global that would run code spliced in."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from dali_streampetr.frames.frame_errors import InfoSchemaError
from dali_streampetr.frames.records import read_infos
from dali_streampetr.frames.unpickle import SAFE_GLOBALS, RestrictedUnpickler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
SAMPLE = {
    "infos": [{"token": "t0", "timestamp": 1.5, "gt_boxes": np.zeros((2, 7), np.float32),
               "names": np.array(["car", "bus"]), "valid": np.array([True, False]), "n": np.int64(3)}],
    "metadata": {"version": "v1.0-mini"},
}  # fmt: skip
PICKLES = [pickle.dumps(SAMPLE, protocol=p) for p in range(6)]


def payloads(marker: Path) -> list[bytes]:
    """Pickle fragments that, unpickled unrestricted, create ``marker`` (protocol 0 and 4 spellings)."""
    cmd = f"touch {marker}".encode()
    return [
        b"cos\nsystem\n(S'" + cmd + b"'\ntR",
        b"cposix\nsystem\n(S'" + cmd + b"'\ntR",
        b"\x8c\x02os\x94\x8c\x06system\x94\x93\x8c" + bytes([len(cmd)]) + cmd + b"\x85R",
        b'cbuiltins\neval\n(S\'__import__("os").system("' + cmd + b"\")'\ntR",
        b"cbuiltins\ngetattr\n(cbuiltins\nobject\nS'__subclasses__'\ntR",
    ]


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "code-ran"


def _check(tmp_path: Path, marker: Path, raw: bytes, monkeypatch) -> None:
    resolved = []
    original = RestrictedUnpickler.find_class

    def spy(self, module: str, name: str):
        found = original(self, module, name)  # raises for anything not allowed
        resolved.append((module, name))
        return found

    monkeypatch.setattr(RestrictedUnpickler, "find_class", spy)
    path = tmp_path / "infos.pkl"
    path.write_bytes(raw)
    try:
        read_infos(path)
    except InfoSchemaError as exc:
        assert str(path) in str(exc)
    assert not marker.exists()
    assert all(g in SAFE_GLOBALS or (g[0] == "numpy.dtypes" and g[1].endswith("DType")) for g in resolved)


@FUZZ
@given(raw=st.binary(max_size=300))
def test_random_bytes_are_a_named_error_and_run_nothing(tmp_path, marker, raw, monkeypatch) -> None:
    _check(tmp_path, marker, raw, monkeypatch)


@FUZZ
@given(
    which=st.integers(0, 5),
    flips=st.dictionaries(st.integers(0, 10_000), st.integers(1, 255), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
    splice=st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(0, 4))),
)
def test_damaged_pickles_with_code_spliced_in_are_a_named_error_and_run_nothing(
    tmp_path, marker, which, flips, cut, splice, monkeypatch
) -> None:
    raw = bytearray(PICKLES[which])
    for at, mask in flips.items():
        raw[at % len(raw)] ^= mask
    if splice is not None:
        at, k = splice
        at %= len(raw)
        raw[at:at] = payloads(marker)[k]
    if cut is not None:
        raw = raw[: cut % (len(raw) + 1)]
    _check(tmp_path, marker, bytes(raw), monkeypatch)


@pytest.mark.parametrize("k", range(5))
def test_each_payload_alone_is_refused_by_name_and_would_run_unrestricted(tmp_path, marker, k) -> None:
    """The payloads are real: a plain unpickle of the first three runs ``touch``."""
    path = tmp_path / "infos.pkl"
    path.write_bytes(b"\x80\x02" + payloads(marker)[k] + b".")
    with pytest.raises(InfoSchemaError, match=rf"{path} is not a readable info pickle: refers to the global"):
        read_infos(path)
    assert not marker.exists()
    if k < 3:
        pickle.loads(path.read_bytes())
        assert marker.exists()
