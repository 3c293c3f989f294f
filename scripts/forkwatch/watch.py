"""`watch`: the series checked (`rebase --check` in a throw-away copy) against the branch head of every
source of `upstream/forks.toml`, those that carry over optionally vetted (`vet`), in one summary."""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from overlaytool import load_targets

from .check_outcome import CARRIES_OVER, ERROR, UNREACHABLE, CheckOutcome, outcome_of
from .errors import ForkwatchError
from .scratch_copy import call, overlaytool, scratch
from .vet import VetSettings, steps_json, vet

FULL_ID = re.compile(r"^[0-9a-f]{40}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
KEYS = {"name", "url", "branch"}


@dataclass(frozen=True)
class Source:
    """One repository to check the series against: its name in the summary, URL (or local path) and
    the branch to follow."""

    name: str
    url: str
    branch: str


def load_sources(path: Path) -> list[Source]:
    """The `[[source]]` entries of `path`; a clear error naming the file and the entry otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ForkwatchError(f"{path}: no such sources file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ForkwatchError(f"{path}: not valid TOML ({exc})") from None
    entries = data.get("source")
    if not isinstance(entries, list) or not entries:
        raise ForkwatchError(f"{path}: needs at least one [[source]] table (name, url, branch)")
    sources: list[Source] = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: source {i}"
        if not isinstance(entry, dict):
            raise ForkwatchError(f"{where}: not a table")
        if missing := KEYS - entry.keys():
            raise ForkwatchError(f"{where}: lacks {', '.join(sorted(missing))}")
        if extra := entry.keys() - KEYS:
            raise ForkwatchError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        if not all(isinstance(entry[k], str) and entry[k].strip() for k in KEYS):
            raise ForkwatchError(f"{where}: name, url and branch must be non-empty strings")
        if not NAME.match(entry["name"]):
            raise ForkwatchError(
                f"{where}: name {entry['name']!r} is not a plain word (letters, digits, ._-)"
            )
        if entry["branch"].startswith("-"):
            raise ForkwatchError(f"{where}: branch {entry['branch']!r} starts with '-'")
        sources.append(Source(entry["name"], entry["url"], entry["branch"]))
    names = [s.name for s in sources]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise ForkwatchError(f"{path}: source name(s) {', '.join(dupes)} given twice")
    return sources


def head_of(source: Source, timeout: float = 120) -> tuple[str | None, str]:
    """The commit `source.branch` names at `source.url`, or None and why it cannot be had."""
    done = call(["git", "ls-remote", "--heads", "--", source.url, source.branch], Path.cwd(), {}, timeout)
    if not done.ok:
        return None, f"cannot reach {source.url}: {done.tail(3) or f'git exit {done.returncode}'}"
    wanted = f"refs/heads/{source.branch}"
    for line in done.output.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == wanted and FULL_ID.match(sha):
            return sha, ""
    return None, f"{source.url} has no branch {source.branch}"


def check_source(root: Path, real_cache: Path, source: Source, pinned_url: str) -> CheckOutcome:
    """The `rebase --check` outcome of one source (unreachable ones included, never raising for them)."""
    commit, why = head_of(source)
    if commit is None:
        return CheckOutcome(UNREACHABLE, message=why)
    frm = [] if source.url == pinned_url else ["--from", source.url]
    with scratch(root, real_cache) as (project, cache):
        done = overlaytool(project, cache, "rebase", "--check", commit, *frm)
        report = load_targets(project)[0].checkout.parent / "rebase-report.json"
        try:
            outcome = outcome_of(done.returncode, done.output, report)
        except ForkwatchError as exc:  # this source's report, not the watch, is broken
            return CheckOutcome(ERROR, commit, message=f"{exc}\n{done.tail(8)}")
    if not outcome.target_commit or not FULL_ID.match(outcome.target_commit):
        outcome.target_commit = commit
    return outcome


def watch(
    root: Path, real_cache: Path, sources: list[Source], settings: VetSettings | None = None
) -> tuple[dict, list[dict]]:
    """The pin and one summary entry per source, in the order given."""
    target = load_targets(root)[0]
    entries = []
    for source in sources:
        print(f"watch: {source.name} ({source.url} {source.branch})", file=sys.stderr, flush=True)
        outcome = check_source(root, real_cache, source, target.pin.url)
        entry = {"name": source.name, "url": source.url, "branch": source.branch, **outcome.to_json()}
        entry["vet"] = None
        if settings is not None and outcome.state == CARRIES_OVER:
            frm = None if source.url == target.pin.url else source.url
            assert outcome.target_commit is not None
            entry["vet"] = steps_json(vet(root, outcome.target_commit, frm, settings, real_cache))
        print(f"watch: {source.name}: {entry['state']}", file=sys.stderr, flush=True)
        entries.append(entry)
    return {"name": target.pin.name, "commit": target.pin.commit}, entries
