"""The tooling's TOML readers never crash: any content of `patches/config.toml` or a pin file
(random bytes, random text, the real files with characters changed or values replaced) is read, or
refused with an `OverlayError` naming the file; never another exception (a traceback)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from overlaytool import OverlayError
from overlaytool.pins import Pin, load_pin
from overlaytool.targets import CONFIG, Target, load_targets

REPO = Path(__file__).resolve().parents[2]
FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
REAL_PIN = (REPO / "upstream" / "streampetr.toml").read_text()
REAL_CONFIG = (REPO / CONFIG).read_text()
VALUES = st.sampled_from(
    [
        '""',
        '"../x"',
        '"/etc"',
        '"a\\u0000b"',
        "1",
        "true",
        "[]",
        "{}",
        '"x"',
        "1979-05-27",
        '"\\ud800"',
        "nan",
    ]
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project root with the repository's pins, series files and overlay folder (empty)."""
    for rel in ("upstream/streampetr.toml", "upstream/mmdetection3d.toml", "patches/streampetr/series",
                "patches/mmdetection3d/series"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, tmp_path / rel)
    (tmp_path / "overlay").mkdir()
    return tmp_path


def edits(text: str):
    """``text`` with characters replaced, deleted or inserted, or a value replaced."""
    lines = text.splitlines(keepends=True)

    def replace_value(i: int, value: str) -> str:
        out = list(lines)
        k = i % len(out)
        if "=" in out[k]:
            out[k] = out[k].split("=", 1)[0] + "= " + value + "\n"
        return "".join(out)

    def splice(at: int, cut: int, insert: str) -> str:
        at %= len(text) + 1
        return text[:at] + insert + text[at + cut :]

    return st.one_of(
        st.builds(replace_value, st.integers(0, 100), VALUES),
        st.builds(splice, st.integers(0, 10_000), st.integers(0, 5), st.text(max_size=5)),
    )


def contents(real: str):
    return st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        edits(real).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


@FUZZ
@given(raw=contents(REAL_PIN))
def test_any_pin_file_is_read_or_refused_by_name(root: Path, raw: bytes) -> None:
    path = root / "upstream" / "streampetr.toml"
    path.write_bytes(raw)
    try:
        pin = load_pin(path)
    except OverlayError as exc:
        assert str(path) in str(exc)
        return
    assert isinstance(pin, Pin) and all(isinstance(getattr(pin, k), str) for k in ("name", "url", "commit"))
    assert not Path(pin.checkout).is_absolute() and ".." not in Path(pin.checkout).parts
    assert all(v is None or isinstance(v, str) for v in (pin.tag, pin.date, pin.source))


@FUZZ
@given(raw=contents(REAL_CONFIG))
def test_any_target_list_is_read_or_refused_by_name(root: Path, raw: bytes) -> None:
    path = root / CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    try:
        targets = load_targets(root)
    except OverlayError as exc:
        assert str(root) in str(exc)  # the config or the pin file it names
        return
    assert targets and all(isinstance(t, Target) for t in targets)
    assert all(t.patch_dir.is_relative_to(root) and t.checkout.is_relative_to(root) for t in targets)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b"\xff\xfe name = 1", "not valid TOML"),
        (
            REAL_PIN.replace('date = "2024-06-26"', "date = 2024-06-26").encode(),
            "key 'date' must be a string",
        ),
        (REAL_PIN.replace('checkout = "upstream/StreamPETR"', 'checkout = "up\\u0000x"').encode(), "inside"),
    ],
    ids=["not-utf8", "toml-date", "nul-in-path"],
)
def test_the_inputs_that_used_to_raise_a_traceback_are_named(root: Path, text: bytes, says: str) -> None:
    """Non-UTF-8 bytes (UnicodeDecodeError), a TOML date where a string belongs, a NUL in a path."""
    path = root / "upstream" / "streampetr.toml"
    path.write_bytes(text)
    with pytest.raises(OverlayError, match=says):
        load_pin(path)


def test_a_pin_path_that_is_a_folder_is_named(root: Path) -> None:
    (root / CONFIG).parent.mkdir(parents=True, exist_ok=True)
    (root / CONFIG).write_text(REAL_CONFIG.replace('pin = "upstream/streampetr.toml"', 'pin = "overlay"'))
    with pytest.raises(OverlayError, match=rf"{root / 'overlay'}: cannot be read"):
        load_targets(root)
