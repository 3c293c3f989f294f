"""One row per config, whatever a config does: ``skipped`` by rule (:mod:`.configs`), the comparison's
record, or ``not comparable`` (:mod:`.not_comparable`); the JSON rewritten after every row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .configs import loaded_skip_reason, static_skip_reason
from .not_comparable import not_comparable
from .original import config_path
from .verdict import result_of, write_json


def _mode(cfg: Any) -> str:
    from dali_streampetr.toolkit import declared_mode

    try:
        return declared_mode(cfg)
    except Exception:  # noqa: BLE001  (a config the reader cannot classify: its comparison says why)
        return "?"


def row(
    config: str,
    compare: Callable[[str], dict[str, Any]],
    read: Callable[[str], Any],
    split: str,
    data_root: Path,
) -> dict[str, Any]:
    """The row of one config: skipped by rule, ``compare(config)``'s record, or not comparable."""
    mode = "?"
    try:
        reason = static_skip_reason(config_path(config))
        if reason is None:
            cfg = read(config)
            reason = loaded_skip_reason(cfg, split)
            mode = _mode(cfg) if reason is None else mode
        if reason is not None:
            return {"config": config, "mode": "-", "skipped": reason, "ok": True}
        record = compare(config)
    except (Exception, SystemExit) as exc:  # noqa: BLE001  (every exception becomes the config's row)
        return {"config": config, "mode": mode, "not_comparable": not_comparable(exc, data_root), "ok": False}
    record.setdefault("mode", mode)
    return record


def sweep(
    configs: list[str] | tuple[str, ...],
    compare: Callable[[str], dict[str, Any]],
    read: Callable[[str], Any],
    *,
    split: str,
    data_root: Path,
    out: Path,
    render: Callable[[dict[str, Any]], str],
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Every config's row (:func:`row`), in order; ``out`` (JSON) rewritten after each."""
    records: list[dict[str, Any]] = []
    for config in configs:
        log(f"equivalence ({split} split): {config} on {data_root}")
        record = row(config, compare, read, split, data_root)
        records.append(record)
        write_json(records, out)
        full = not {"refused", "skipped", "not_comparable"} & record.keys()
        log((render(record) if full else result_of(record)) + "\n")
    return records
