"""The watch's one summary (`watch-summary.json` + `.md`) and the change-of-state rule: a source's
state is what a maintainer acts on (carries over, stops or unreachable, each patch's status, what would
stop, the vetting steps' results); a new commit with the same state is no change (docs/rebase.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from overlaytool import replace_file

from .errors import ForkwatchError

FORMAT = "streampetr-dali watch summary 1"
JSON_NAME, MD_NAME = "watch-summary.json", "watch-summary.md"


def state_of(entry: dict) -> dict:
    """The parts of one source's entry that make its state."""
    stop = entry.get("would_stop") or None
    return {
        "state": entry["state"],
        "patches": [[p["name"], p["status"], bool(p.get("provisional"))] for p in entry.get("patches", [])],
        "would_stop": [stop.get("kind"), stop.get("patch")] if stop else None,
    }


def vet_state(entry: dict) -> list | None:
    vet = entry.get("vet")
    return [[s["step"], s["ok"]] for s in vet["steps"]] if vet else None


def changes(previous: dict | None, current: dict) -> list[str]:
    """What changed since `previous` (one line per source), empty when nothing did or there is no
    previous summary (the first run records the baseline)."""
    if previous is None:
        return []
    before = {e["name"]: e for e in previous["sources"]}
    now = {e["name"]: e for e in current["sources"]}
    lines = [f"{name}: no longer watched" for name in before if name not in now]
    for name, entry in now.items():
        old = before.get(name)
        if old is None:
            lines.append(f"{name}: newly watched ({entry['state']})")
            continue
        a, b = state_of(old), state_of(entry)
        if a["state"] != b["state"]:
            lines.append(f"{name}: {a['state']} → {b['state']}")
        elif a != b:
            lines.append(f"{name}: {_what_differs(a, b)}")
        va, vb = vet_state(old), vet_state(entry)
        if va is not None and vb is not None and va != vb:
            lines.append(f"{name}: vetting {_vet_word(va)} → {_vet_word(vb)}")
    return lines


def _what_differs(a: dict, b: dict) -> str:
    old = {p[0]: p for p in a["patches"]}
    moved = [
        f"{p[0]} {old[p[0]][1] if p[0] in old else 'absent'} → {p[1]}{' (provisional)' if p[2] else ''}"
        for p in b["patches"]
        if old.get(p[0]) != p
    ]
    moved += [f"{name} dropped from the series" for name in old if name not in {p[0] for p in b["patches"]}]
    if a["would_stop"] != b["would_stop"]:
        moved.append(f"would stop: {_stop_word(a['would_stop'])} → {_stop_word(b['would_stop'])}")
    return "; ".join(moved)


def _stop_word(stop: list | None) -> str:
    return "nothing" if stop is None else f"{stop[0]} in {stop[1] or 'the finish'}"


def _vet_word(steps: list) -> str:
    failed = [s for s, ok in steps if ok is False]
    return f"fails at {failed[0]}" if failed else "passes"


def read_summary(path: Path) -> dict | None:
    """A previous summary, None when there is none; a clear error when it is not one."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ForkwatchError(f"{path}: the previous summary is not readable JSON ({exc})") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("sources"), list)
    ):
        raise ForkwatchError(f"{path}: not a watch summary (format {FORMAT!r} with a list of sources)")
    for i, entry in enumerate(data["sources"], 1):
        if not isinstance(entry, dict) or not {"name", "state"} <= entry.keys():
            raise ForkwatchError(f"{path}: source {i} lacks name or state")
    return data


def make_summary(
    pin: dict, entries: list[dict], trained: bool, previous: Path | None, prior: dict | None
) -> dict:
    summary = {
        "format": FORMAT,
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "pin": pin,
        "trained": trained,
        "sources": entries,
        "previous": str(previous) if prior is not None else None,
    }
    summary["changes"] = changes(prior, summary)
    summary["changed"] = bool(summary["changes"])
    return summary


def write_summary(summary: dict, out: Path) -> tuple[Path, Path]:
    """Write the JSON and the Markdown into `out` (each replaced atomically); their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = out / JSON_NAME, out / MD_NAME
    texts = json.dumps(summary, indent=1, ensure_ascii=False) + "\n", markdown(summary)
    for path, text in zip(paths, texts, strict=True):
        replace_file(path, text)
    return paths


def _stop_cell(entry: dict) -> str:
    stop = entry.get("would_stop")
    if entry["state"] in ("unreachable", "error"):
        return next(reversed((entry.get("message") or "").splitlines()), "")
    if not stop:
        return "—"
    paths = f" ({', '.join(f'`{p}`' for p in stop['paths'])})" if stop.get("paths") else ""
    return f"{stop['kind']} in {stop.get('patch') or 'the finish'}{paths}"


def markdown(summary: dict) -> str:
    pin = summary["pin"]
    lines = [f"# Upstream watch, {summary['generated']}", ""]
    lines += [f"Series pinned at {pin['name']} `{pin['commit'][:12]}`.", ""]
    if summary["previous"] is None:
        lines += ["No previous summary: this run records the baseline.", ""]
    elif summary["changes"]:
        lines += ["**Changed since the previous summary:**", "", *[f"- {c}" for c in summary["changes"]], ""]
    else:
        lines += ["No change of state since the previous summary.", ""]
    lines += ["| source | branch | commit | state | would stop | vetting |", "|---|---|---|---|---|---|"]
    for e in summary["sources"]:
        commit = f"`{e['target_commit'][:12]}`" if e.get("target_commit") else "—"
        vet = e.get("vet")
        vetting = "—" if vet is None else ("pass" if vet["ok"] else "FAIL")
        cell = _stop_cell(e).replace("|", "\\|")
        lines.append(f"| {e['name']} | {e['branch']} | {commit} | {e['state']} | {cell} | {vetting} |")
    for e in summary["sources"]:
        lines += ["", f"## {e['name']}: {e['state']}", "", f"{e['url']} `{e['branch']}`"]
        if e.get("patches"):
            lines += ["", "| patch | status |", "|---|---|"]
            for p in e["patches"]:
                moves = f" ({', '.join(p['moves'])})" if p.get("moves") else ""
                flag = " *provisional*" if p.get("provisional") else ""
                flag += " *may be an artefact of a patch left out*" if p.get("may_be_artefact") else ""
                lines.append(f"| {p['name']} | {p['status']}{moves}{flag} |")
        if e.get("message"):
            lines += ["", "```", e["message"], "```"]
        if e.get("vet"):
            lines += ["", "| vetting step | result | detail |", "|---|---|---|"]
            for s in e["vet"]["steps"]:
                mark = {True: "pass", False: "FAIL", None: "skipped"}[s["ok"]]
                detail = s["detail"].splitlines()[0] if s["detail"] else ""
                lines.append(f"| {s['step']} | {mark} | {detail.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"
