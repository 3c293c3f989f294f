"""What a `rebase --check` said about a source: the state, each patch's status, what would stop; from
its report (`rebase-report.json`) when there is one, else from the status lines it prints."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import ForkwatchError

CARRIES_OVER, STOPS, UNREACHABLE, ERROR = "carries-over", "stops", "unreachable", "error"
STOP_STATUSES = ("conflict", "missing-at-target")
HEADER = re.compile(r"^rebase --check (\S+): ([0-9a-f]{7,40}) → ([0-9a-f]{7,40})$", re.M)
STATUS_LINE = re.compile(r"^  (\S[^:\n]*): (\S+)(.*)$")  # name, status, what `rebase --check` adds
MOVES = re.compile(r"^ \(([^()]*→[^()]*)\)")  # `(a.py → src/a.py, b.py → src/b.py)` after the status
NOT_FINISHING = re.compile(r"^the replayed series would not finish: (.*)$", re.M)


@dataclass
class PatchStatus:
    name: str
    status: str
    moves: list[str] = field(default_factory=list)
    provisional: bool = False
    may_be_artefact: bool = False  # a provisional stop that shares files with a patch left out before it


@dataclass
class CheckOutcome:
    """One source's check: `state` is carries-over, stops, unreachable or error."""

    state: str
    target_commit: str | None = None
    patches: list[PatchStatus] = field(default_factory=list)
    would_stop: dict | None = None
    message: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def outcome_of(returncode: int, output: str, report: Path | None) -> CheckOutcome:
    """The outcome of a check that exited `returncode` printing `output`, with its report if any."""
    data = _read_report(report) if report is not None and report.is_file() else None
    header = HEADER.search(output)
    if data is None and header is None:  # it never reached the replay
        return CheckOutcome(ERROR, message=_last_lines(output))
    patches = _from_report(data) if data is not None else _from_lines(output, header)
    commit = (data or {}).get("target_commit") or (data or {}).get("new") or (header and header.group(3))
    outcome = CheckOutcome(CARRIES_OVER if returncode == 0 else STOPS, commit, patches)
    if data is not None and "would_stop" in data:
        outcome.would_stop = _stop_of(data["would_stop"], report)
    if outcome.would_stop is None and returncode != 0:
        outcome.would_stop = _derived_stop(patches, output)
    if returncode != 0:
        outcome.message = _last_lines(output)
    return outcome


def _read_report(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ForkwatchError(f"{path}: not a readable rebase report ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("patches"), list):
        raise ForkwatchError(f"{path}: not a rebase report (no list of patches)")
    return data


def _from_report(data: dict) -> list[PatchStatus]:
    """Per patch from a report: its `patch_entries` (name, status, moves, provisional,
    may_be_artefact) when it has them, else `patches` (names, or entries with their own fields) + the
    `statuses`/`moves` maps; a top-level `provisional` as a list of names or a map. A status not
    reached reads `pending`."""
    statuses, moves = data.get("statuses") or {}, data.get("moves") or {}
    provisional = data.get("provisional") or []
    entries = data.get("patch_entries")
    out = []
    for entry in entries if isinstance(entries, list) and entries else data["patches"]:
        if isinstance(entry, dict):
            name = str(entry.get("name", "?"))
            status = entry.get("status") or statuses.get(name, "pending")
            moved, flag = entry.get("moves") or moves.get(name) or [], bool(entry.get("provisional"))
            artefact = bool(entry.get("may_be_artefact"))
        else:
            name = str(entry)
            status, moved, flag, artefact = statuses.get(name, "pending"), moves.get(name) or [], False, False
        if isinstance(provisional, dict):
            flag = flag or bool(provisional.get(name))
        elif isinstance(provisional, list):
            flag = flag or name in provisional
        out.append(PatchStatus(name, str(status), [str(m) for m in moved], flag, artefact))
    return out


def _from_lines(output: str, header: re.Match) -> list[PatchStatus]:
    """Per patch from `rebase --check`'s status lines (overlaytool.rebase.report.status_of):
    `  name: status (moves) [provisional: after the stop at P] (may be an artefact: ...)`."""
    out = []
    for line in output[header.end() :].splitlines():
        match = STATUS_LINE.match(line.rstrip())
        if match is None:
            if out:
                break
            continue
        name, status, rest = match.groups()
        moves = MOVES.match(rest)
        out.append(
            PatchStatus(
                name,
                status,
                [m.strip() for m in moves.group(1).split(",")] if moves else [],
                "[provisional:" in rest or "(provisional)" in rest,  # today's form, and the first one
                "(may be an artefact:" in rest,
            )
        )
    return out


def _stop_of(value: object, report: Path | None) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or "kind" not in value:
        raise ForkwatchError(f"{report}: would_stop is neither null nor a table with a kind")
    paths = value.get("paths") or []
    stop = {"kind": str(value["kind"]), "patch": value.get("patch"), "paths": [str(p) for p in paths]}
    if value.get("message"):
        stop["message"] = str(value["message"])
    return stop


def _derived_stop(patches: list[PatchStatus], output: str) -> dict:
    """What would stop, from the statuses (first stopping patch) or the finish check's message."""
    for p in patches:
        if p.status in STOP_STATUSES:
            return {"kind": p.status, "patch": p.name, "paths": []}
    finish = NOT_FINISHING.search(output)
    return {"kind": "finish-check", "patch": None, "paths": [], "message": finish.group(1) if finish else ""}


def _last_lines(output: str, count: int = 8) -> str:
    return "\n".join(output.strip().splitlines()[-count:])
