"""The state of a rebase: `.git/streampetr-dali/rebase.json`, typed, saved atomically; an older
version's state (no `format`) is read as it is, any other shape refused by name.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..atomic_write import replace_file
from ..checkout.gitdir import state_dir
from ..errors import OverlayError
from ..targets import Target

FORMAT = 2
# why `--skip` dropped a patch: its stop's kind (`conflict`, `missing-at-target`), or this: its
# `--continue` was refused because the resolution changed nothing (the tool advised `--skip`)
UNCHANGED = "resolution-changed-nothing"


@dataclass
class Stop:
    """Why the replay stopped: a patch (`conflict`, `missing-at-target`) or the overlay
    (`overlay-reference`: references of the overlay into upstream that do not resolve); `--check`
    also records `overlap` and `finish-check` (the finish's checks would fail)."""

    kind: str
    paths: list[str] = field(default_factory=list)  # the patch's paths at the target / the overlay files
    missing: list[str] = field(default_factory=list)  # files the patch modifies that the target lacks
    patch: str | None = None  # the stopped patch (None for an overlay stop)
    references: list[dict] = field(default_factory=list)  # the unresolved overlay references
    note: str = ""  # one line, where the kind alone does not say it (`finish-check`)


@dataclass
class RebaseState:
    """Where a rebase (or a `--check`) stands; what the report and every later command read."""

    old: str
    new: str
    patches: list[str]
    source: str | None = None  # what the new pin records as `source`
    given_source: str | None = None  # the `--from` argument as given
    keep_created: bool = False  # this rebase made the cache's keep ref of `new`
    commits: list[str] = field(default_factory=list)  # the series as commits on `old`
    statuses: dict[str, str] = field(default_factory=dict)
    moves: dict[str, list[str]] = field(default_factory=dict)
    renames: dict[str, str] | None = None  # None until the replay began (old path → new path)
    next: int = 0
    stop: Stop | None = None
    head: str | None = None  # where a killed replay is undone to
    tip: str | None = None  # the replayed series' last commit (set by the finish)
    warnings: list[str] = field(default_factory=list)
    provisional: list[str] = field(default_factory=list)  # statuses computed past a stop (--check)
    first_stop: Stop | None = None  # the first stop a --check went past
    references: list[dict] | None = None  # overlay references that do not resolve (None: not checked)
    unchecked: list[dict] = field(default_factory=list)  # overlay references built at run time
    # --check: provisional patch → the files it shares with a patch left out before it (none: independent)
    shared: dict[str, list[str]] = field(default_factory=dict)
    dropped: dict[str, list[str]] = field(default_factory=dict)  # patch → files --drop-file dropped
    unchanged: list[str] = field(default_factory=list)  # patches whose resolution changed nothing
    skips: dict[str, str] = field(default_factory=dict)  # patch → why --skip dropped it (see UNCHANGED)
    settled: dict[str, list[str]] = field(default_factory=dict)  # patch → evidence of a conflict settled

    @property
    def stopped_patch(self) -> str:
        return self.patches[self.next]

    def to_json(self) -> dict:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: object, where: Path) -> RebaseState:
        """The state in `data` (read from `where`); an unknown shape is an error naming the file."""
        known = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or data.get("format", 1) not in (1, FORMAT):
            raise OverlayError(f"{where}: not a rebase state this version reads; `nox -s rebase -- --abort`.")
        extra = sorted(set(data) - known - {"format"})
        missing = sorted({"old", "new", "patches"} - set(data))
        if extra or missing:
            raise OverlayError(
                f"{where}: not a rebase state this version reads (unknown keys {extra}, missing {missing}); "
                "`nox -s rebase -- --abort` restores the project files from the copy taken at the start."
            )
        values = {k: v for k, v in data.items() if k in known}
        for key in ("stop", "first_stop"):
            if isinstance(values.get(key), dict):
                values[key] = Stop(**{k: v for k, v in values[key].items() if k in Stop.__dataclass_fields__})
        state = cls(**values)
        if (
            state.stop is not None
            and state.stop.patch is None
            and state.stop.kind in ("conflict", "missing-at-target")
        ):
            state.stop.patch = state.patches[state.next]  # a state of the older version names it by index
        return state


def state_path(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase.json"


def in_progress(target: Target) -> bool:
    return (target.checkout / ".git").exists() and state_path(target).exists()


def save_state(target: Target, state: RebaseState) -> None:
    replace_file(state_path(target), json.dumps(state.to_json(), indent=1, ensure_ascii=False) + "\n")


def load_state(target: Target) -> RebaseState:
    if not in_progress(target):
        raise OverlayError("No rebase is in progress.")
    path = state_path(target)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise OverlayError(
            f"{path}: not readable as a rebase state ({exc}); `nox -s rebase -- --abort`."
        ) from exc
    return RebaseState.from_json(data, path)
