"""The settings table of docs/loader.md is ``LoaderConfig``: one row per ``data_loading_config``
key, each with the field's default, and no row for a key the loader does not have; the README
restates none of it. The DALI config that spells out every knob names each one at its default."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from dali_streampetr.config.reader import MODE_KNOBS
from dali_streampetr.sampling.eval_shards import checked_sharding
from dali_streampetr.settings import DALI_KNOBS, KNOB, LoaderConfig

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^\| key \| default \|", re.MULTILINE)
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+?) \|")
EVERY_KNOB_CONFIG = ROOT / "overlay/projects/configs/dali/stream_petr_r50_flash_704_bs2_seq_24e_dali.py"


def knob_defaults(config_class: type = LoaderConfig) -> dict[str, Any]:
    """Every ``data_loading_config`` key of ``config_class`` and its default."""
    return {f.name: f.default for f in fields(config_class) if f.metadata.get(KNOB)}


def table_rows(markdown: str) -> list[tuple[str, str]]:
    """(key, default cell) of every row of each ``| key | default | ...`` table in ``markdown``."""
    rows = []
    for header in HEADER.finditer(markdown):
        for line in markdown[header.end() :].splitlines()[2:]:
            if not line.startswith("|"):
                break
            if match := ROW.match(line):
                rows.append((match[1], match[2].strip()))
    return rows


def same_default(cell: str, default: Any) -> bool:
    """Whether the table's cell (``cpu``, ``2``, ``True``, ``30``) spells ``default``."""
    text = cell.strip("`")
    if isinstance(default, str):
        return text.strip("'\"") == default
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    if isinstance(default, bool):
        return value is default
    return not isinstance(value, bool) and value == default


def table_problems(markdown: str, defaults: dict[str, Any]) -> list[str]:
    """What differs between the settings table(s) of ``markdown`` and ``defaults`` (key -> default)."""
    rows = table_rows(markdown)
    listed = [key for key, _ in rows]
    problems = []
    if missing := [k for k in defaults if k not in listed]:
        problems.append(f"no row for {', '.join(missing)}")
    if extra := [k for k in listed if k not in defaults]:
        problems.append(f"rows for keys LoaderConfig lacks: {', '.join(extra)}")
    if twice := sorted({k for k in listed if listed.count(k) > 1}):
        problems.append(f"more than one row for {', '.join(twice)}")
    problems += [
        f"{key}: the table says {cell}, LoaderConfig's default is {defaults[key]!r}"
        for key, cell in rows
        if key in defaults and not same_default(cell, defaults[key])
    ]
    return problems


def config_dict_call(path: Path, name: str) -> dict[str, Any]:
    """The keyword arguments of ``name = dict(...)`` at the top level of the config ``path``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return {kw.arg: ast.literal_eval(kw.value) for kw in node.value.keywords}
    raise AssertionError(f"{path.name} has no {name} = dict(...)")


def test_the_settings_table_is_loader_config() -> None:
    assert table_problems((ROOT / "docs" / "loader.md").read_text(), knob_defaults()) == []


def test_the_readme_restates_no_setting_and_points_to_the_table() -> None:
    """A second table would drift from the first: the README links to docs/loader.md's instead."""
    readme = (ROOT / "README.md").read_text()
    assert not HEADER.search(readme) and table_rows(readme) == []
    assert "[docs/loader.md](docs/loader.md)" in readme


def test_a_missing_or_renamed_table_is_reported_key_by_key() -> None:
    defaults = knob_defaults()
    every = [f"no row for {', '.join(defaults)}"]
    assert table_problems("", defaults) == every
    renamed = HEADER.sub("| setting | default |", (ROOT / "docs" / "loader.md").read_text())
    assert table_problems(renamed, defaults) == every


def test_dali_knobs_are_the_knob_fields_in_order() -> None:
    assert tuple(knob_defaults()) == DALI_KNOBS
    assert {"device", "num_threads", "log_slots"} <= set(DALI_KNOBS)
    assert not {"mean", "samples_per_gpu", "mode", "aug"} & set(DALI_KNOBS)


def test_the_config_that_spells_out_every_knob_has_each_at_its_default() -> None:
    """Every ``data_loading_config`` key, the sampling mode's (``test_sharding``) included."""
    spelled = config_dict_call(EVERY_KNOB_CONFIG, "data_loading_config")
    defaults = {**knob_defaults(), "test_sharding": checked_sharding(None, dali=True)}
    assert set(defaults) == {*DALI_KNOBS, *MODE_KNOBS}
    assert set(spelled) == set(defaults)
    changed = {k: v for k, v in spelled.items() if v != defaults[k]}
    assert changed == {"device": "gpu", "num_threads": 4}  # what its comment says


def test_a_new_field_a_changed_default_or_a_stale_row_is_reported() -> None:
    table = (ROOT / "docs" / "loader.md").read_text()
    defaults = knob_defaults()
    assert table_problems(table, {**defaults, "new_knob": 1}) == ["no row for new_knob"]
    assert table_problems(table, {**defaults, "batch_timeout_s": 45.0}) == [
        "batch_timeout_s: the table says 30, LoaderConfig's default is 45.0"
    ]
    assert table_problems(table, {**defaults, "roi_decode": 1}) == [
        "roi_decode: the table says True, LoaderConfig's default is 1"
    ]
    without_log_slots = {k: v for k, v in defaults.items() if k != "log_slots"}
    assert table_problems(table, without_log_slots) == ["rows for keys LoaderConfig lacks: log_slots"]
