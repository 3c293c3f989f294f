"""The patch table of docs/patches.md is the series: every patch of patches/streampetr/series, in order, each
once, and its *upstreamable* column says what the patch's DEP-3 ``Forwarded:`` header says."""

from __future__ import annotations

import re
from pathlib import Path

from overlaytool.series import read_series
from overlaytool.targets import load_targets, select_one

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `([\w.-]+)` \| (yes|no) \|", re.MULTILINE)
FORWARDED = re.compile(r"^Forwarded:\s*(\S+)", re.MULTILINE)


def table_problems(table: str, patch_dir: Path) -> list[str]:
    """What differs between the rows of ``table`` (Markdown) and the series in ``patch_dir``."""
    rows = ROW.findall(table)
    names = [name.removesuffix(".patch") for name in read_series(patch_dir)]
    problems = []
    listed = [name for name, _ in rows]
    if missing := [n for n in names if n not in listed]:
        problems.append(f"no row for {', '.join(missing)}")
    if extra := [n for n in listed if n not in names]:
        problems.append(f"rows for patches the series lacks: {', '.join(extra)}")
    if not missing and not extra and listed != names:
        problems.append(f"the rows are not in the order of the series: {listed}")
    for name, upstreamable in rows:
        patch = patch_dir / f"{name}.patch"
        header = FORWARDED.search(patch.read_text()) if patch.is_file() else None
        expected = "no" if header is None or header.group(1) == "not-needed" else "yes"
        if upstreamable != expected:
            said = header[0] if header else "no Forwarded: header"
            problems.append(f"{name}: upstreamable {upstreamable}, but its header says {said}")
    return problems


def test_the_patch_table_is_the_series() -> None:
    assert not table_problems(
        (ROOT / "docs" / "patches.md").read_text(), select_one(load_targets(ROOT), "streampetr").patch_dir
    )


def test_a_missing_row_or_a_wrong_column_is_reported(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("# group\nfix-a.patch\nours-b.patch\n")
    (tmp_path / "fix-a.patch").write_text("Subject: [PATCH] Fix a\n\nForwarded: no\n")
    (tmp_path / "ours-b.patch").write_text("Subject: [PATCH] Ours b\n\nForwarded: not-needed\n")
    good = "| patch | upstreamable | why |\n|---|---|---|\n| `fix-a` | yes | x |\n| `ours-b` | no | y |\n"
    assert table_problems(good, tmp_path) == []
    assert table_problems(good.replace("| `ours-b` | no | y |\n", ""), tmp_path) == ["no row for ours-b"]
    swapped = good.replace("| `fix-a` | yes | x |\n", "") + "| `fix-a` | yes | x |\n"
    assert table_problems(swapped, tmp_path) == [
        "the rows are not in the order of the series: ['ours-b', 'fix-a']"
    ]
    assert table_problems(good.replace("`ours-b` | no", "`ours-b` | yes"), tmp_path) == [
        "ours-b: upstreamable yes, but its header says Forwarded: not-needed"
    ]
