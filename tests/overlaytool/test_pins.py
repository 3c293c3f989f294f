"""The pin files (`upstream/*.toml`): the repository's are valid, a malformed one is refused naming
the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from overlaytool import OverlayError
from overlaytool.pins import load_pin

GOOD_PIN = (
    'name = "StreamPETR"\nurl = "https://github.com/exiawsh/StreamPETR"\n'
    'commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"\ncheckout = "upstream/StreamPETR"\n'
)


def test_real_pins_are_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    pin = load_pin(root / "upstream" / "streampetr.toml")
    assert pin.commit == "95f64702306ccdb7a78889578b2a55b5deb35b2a" and pin.slug == "exiawsh+StreamPETR"
    mm = load_pin(root / "upstream" / "mmdetection3d.toml")
    assert (mm.commit, mm.tag) == ("47285b3f1e9dba358e98fcd12e523cfd0769c876", "v1.0.0rc6")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"', 'commit = "95f6470"', "key 'commit'"),
        ('commit = "95f64702306ccdb7a78889578b2a55b5deb35b2a"', 'commit = "main"', "key 'commit'"),
        ('url = "https://github.com/exiawsh/StreamPETR"', 'url = "github.com exiawsh"', "key 'url'"),
        ('checkout = "upstream/StreamPETR"\n', "", "key 'checkout' is missing"),
        ('checkout = "upstream/StreamPETR"', 'checkout = "../elsewhere"', "key 'checkout'"),
        ('name = "StreamPETR"', "name = [", "not valid TOML"),
        (
            'checkout = "upstream/StreamPETR"',
            'checkout = "upstream/StreamPETR"\nsource = "/a/path"',
            "key 'source'",
        ),
    ],
)
def test_malformed_pin_names_file_and_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "streampetr.toml"
    path.write_text(GOOD_PIN.replace(old, new))
    with pytest.raises(OverlayError) as err:
        load_pin(path)
    assert str(path) in str(err.value) and message in str(err.value)
