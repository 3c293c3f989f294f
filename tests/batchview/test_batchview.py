"""``nox -s inspect`` (``python -m batchview``): a batch summary and the busiest sample's six cameras
with the projected boxes, written as one picture, from the loader's entry points alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image


def test_the_batch_view_summarises_a_batch_and_draws_its_busiest_sample(
    synthetic_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from batchview.__main__ import main

    out = tmp_path / "view" / "batch.png"
    main(["--data-root", str(synthetic_dataset), "--out", str(out), "--threads", "1"])
    printed = capsys.readouterr().out
    assert "img            (2, 1, 6, 3, 256, 704) torch.float32" in printed
    assert "sample 0: frame" in printed and "sample 1: frame" in printed and f"wrote {out}" in printed
    with Image.open(out) as picture:  # six cameras of 704 x 256 (LoaderConfig's final_dim), 3 x 2
        assert (picture.format, picture.size) == ("PNG", (3 * 704, 2 * 256))
        assert picture.getextrema() != ((0, 0), (0, 0), (0, 0))
