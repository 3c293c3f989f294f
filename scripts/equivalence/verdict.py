"""Text tables and the JSON file of an equivalence run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .fast_path import ROW as FAST_ROW

FIELD_ORDER = ("img", "lidar2img", "intrinsics", "extrinsics", "ego_pose", "ego_pose_inv", "timestamp",
               "img_timestamp", "prev_exists", "gt_bboxes_3d", "gt_labels_3d", "gt_bboxes", "centers2d",
               "depths", "gt_labels", "img_metas.gt_bboxes_3d", "img_metas.gt_labels_3d")  # fmt: skip


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def _tolerance(s: dict[str, Any]) -> str:
    t = s["tolerance"]
    if s["kind"] == "image":
        return f"mean <= {t['mean_abs']}, p99.9 <= {t['p99_9']} (per image)"
    return "exact" if t["max_abs"] == 0 else f"max <= {t['max_abs']:g}"


def _details(name: str, s: dict[str, Any], counts: dict[str, dict[str, int]]) -> str:
    if s["kind"] == "image":
        worst = f"{s['worst_image_mean_abs']:.3f} / {s['worst_image_p99_9']:.2f}"
        return f"PSNR {s['psnr_db']:.1f} dB, p99.9 {s['p99_9']:.2f}, worst image mean / p99.9 {worst}"
    if name.endswith("gt_bboxes_3d"):
        return f"{counts['dali']['boxes3d']} boxes (original {counts['original']['boxes3d']})"
    if name == "gt_bboxes":
        return f"{counts['dali']['boxes2d']} boxes (original {counts['original']['boxes2d']})"
    return f"{s['elements']} values"


def field_table(record: dict[str, Any]) -> str:
    """Markdown table: one row per field."""
    fields = record["fields"]
    names = [n for n in FIELD_ORDER if n in fields] + sorted(set(fields) - set(FIELD_ORDER))
    rows = [
        "| field | max abs diff | mean abs diff | details | tolerance | ok |",
        "|---|---|---|---|---|---|",
    ]
    named = [(name, fields[name]) for name in names]
    if "fast_image_path" in record:  # a row of its own after the exact path's images
        named.insert(
            names.index("img") + 1 if "img" in names else 0, (FAST_ROW, record["fast_image_path"]["img"])
        )
    for name, s in named:
        cells = [name, _num(s["max_abs"]), _num(s["mean_abs"]), _details(name, s, record["counts"])]
        cells += [_tolerance(s), "yes" if s["ok"] else "NO"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def summary_lines(record: dict[str, Any]) -> list[str]:
    seq = record["sequence"]["runs"]
    draws = {k: v for k, v in record["draws"].items() if k != "n"}
    worst = min(draws.items(), key=lambda kv: kv[1]["p"])
    n_diffs = len(record["structure_diffs"])
    lines = [
        f"structure: {f'{n_diffs} DIFFS' if n_diffs else 'identical'}"
        " (keys, nesting, DataContainer flags, dtypes, shapes, img_metas values)",
        f"batch order: {'same frames per slot' if record['batch_order']['equal'] else 'DIFFERENT'}"
        f"; cases covered: {'; '.join(record['cases'])}",
        f"sequence order + prev_exists: {sum(r['equal'] for r in seq)}/{len(seq)} runs (split, world size,"
        f" rank) identical over {seq[0]['iterations'] if seq else 0} iterations",
        f"draw distributions ({record['draws']['n']['dali']} draws each): "
        + ", ".join(f"{k} p={v['p']:.3g}" for k, v in draws.items() if v["test"] != "constant")
        + f"; lowest p: {worst[0]} {worst[1]['p']:.3g}",
    ]
    if "fast_image_path" in record:
        diffs = record["fast_image_path"]["target_diffs"]
        lines.append(
            "fast image path: every field but img "
            + (f"{len(diffs)} DIFFS from the exact path" if diffs else "bit-identical to the exact path")
        )
        lines += [f"  fast path diff: {d}" for d in diffs[:20]]
    lines += [f"  structure diff: {d}" for d in record["structure_diffs"][:20]]
    return lines


def render(record: dict[str, Any]) -> str:
    head = (f"## {record['config']}: final_dim {record['final_dim'][0]}x{record['final_dim'][1]}, "
            f"to_rgb={record['to_rgb']}, {record['batches']} batches x {record['samples_per_gpu']}, "
            f"seed {record['seed']} -> {'PASS' if record['ok'] else 'FAIL'}")  # fmt: skip
    return "\n".join([head, "", field_table(record), "", *summary_lines(record)])


def result_of(record: dict[str, Any]) -> str:
    """PASS, FAIL, ``refused: <reason>`` (a handled config: its ``ok`` is True), ``skipped: <rule>``
    (no training config: ``ok`` True) or ``not comparable: <Type>: <message> (<file:line>)`` and what
    would fit."""
    if "refused" in record:
        return f"refused: {record['refused']}"
    if "skipped" in record:
        return f"skipped: {record['skipped']}"
    if "not_comparable" in record:
        e = record["not_comparable"]
        hint = f"; {e['hint']}" if e.get("hint") else ""
        return f"not comparable: {e['type']}: {e['message']} ({e['where']}){hint}"
    return "PASS" if record["ok"] else "FAIL"


def config_table(records: list[dict[str, Any]]) -> str:
    """Markdown table: one row per config (path, training mode, result)."""
    rows = ["| upstream config | training mode | result |", "|---|---|---|"]
    for r in records:
        reason = result_of(r).replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {r['config']} | {r.get('mode', '?').replace('_', ' ')} | {reason} |")
    return "\n".join(rows)


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def write_json(records: list[dict[str, Any]], path: Path) -> None:
    """``{"ok", "configs"}`` at ``path``, replaced whole (the tooling's writer)."""
    from overlaytool import replace_file

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"ok": all(r["ok"] for r in records), "configs": records}
    text = json.dumps(_clean(doc), indent=1, default=str) + "\n"
    replace_file(path, text)


def verdict(records: list[dict]) -> str:
    """The run's word: PASS (every row equal, refused by name or skipped), FAIL (a row differs), or
    NOT ALL COMPARABLE (no row differs, but some configs could not be compared)."""
    if all(r["ok"] for r in records):
        return "PASS"
    if any(not r["ok"] and "not_comparable" not in r for r in records):
        return "FAIL"
    return "NOT ALL COMPARABLE"


def verdict_counts(records: list[dict]) -> str:
    """``10 of 11 configs equal, 1 refused by name (...)``: a refusal is not counted as equal; configs
    not comparable and files skipped by rule are counted apart (skipped files are no configs)."""
    refused = [r["config"] for r in records if "refused" in r]
    skipped = [r["config"] for r in records if "skipped" in r]
    broken = [r["config"] for r in records if "not_comparable" in r]
    configs = len(records) - len(skipped)
    equal = sum(1 for r in records if r["ok"] and not {"refused", "skipped"} & r.keys())
    text = f"{equal} of {configs} configs equal"
    if refused:
        text += f", {len(refused)} refused by name ({', '.join(refused)})"
    if broken:
        text += f", {len(broken)} not comparable ({', '.join(broken)})"
    failed = configs - equal - len(refused) - len(broken)
    text += f", {failed} different" if failed else ""
    if skipped:
        text += f"; {len(skipped)} file(s) skipped by rule ({', '.join(skipped)})"
    return text
