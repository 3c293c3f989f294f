"""Conflicts the replay settles itself, without a stop, each with its evidence (docs/rebase.md): the
target already has the change (*already at the target*), or only line endings differ (*line endings
only*). Where any conflicted file settles by neither, nothing is settled and the patch stops.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ..gitcmd import git
from ..patchfile import FilePatch, Patch

SETTLED = "settled without a stop"  # the heading of the settlements in the output and the report


def _code(line: str) -> str:
    """The line without its indentation; "" for a blank or comment-only line (not evidence either way)."""
    text = line.strip()
    return "" if text.startswith("#") else text


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def present_evidence(fp: FilePatch, rel: str, target: str) -> list[str] | None:
    """Evidence that the target's file `target` already has `fp`'s change, one line per hunk; None
    when a hunk's added lines are not all there in order, or a line it removes is still there."""
    lines = [_code(line) for line in target.splitlines()]
    have, evidence = set(lines), []
    for hunk in fp.hunks:
        added = [_code(a) for a in hunk.added if _code(a)]
        removed = [_code(r) for r in hunk.removed if _code(r) and _code(r) not in added]
        if not added and not removed:
            continue  # comments or blank lines only: nothing to find either way
        found, at = [], 0
        for line in added:
            at = next((i for i in range(at, len(lines)) if lines[i] == line), -1) + 1
            if not at:
                return None
            found.append(at)
        if any(r in have for r in removed):
            return None
        where = hunk.header.split(" @@")[0] + " @@"
        text = (
            f"{rel} {where}: the target has `{_short(added[0])}` (line {found[0]})"
            + (f" and the {len(added) - 1} other line(s) it adds" if len(added) > 1 else "")
            if added
            else f"{rel} {where}: the target has none of the lines it removes"
        )
        if added and removed:
            text += f"; the line(s) it removes are gone (`{_short(removed[0])}`)"
        comments = [a.strip() for a in hunk.added if a.strip().startswith("#")]
        if comments:
            text += f"; its comment line(s) not required (`{_short(comments[0])}`)"
        evidence.append(text)
    return evidence or None


def _endings(data: bytes) -> str:
    crlf = data.count(b"\r\n")
    return "CRLF" if crlf and crlf * 2 >= data.count(b"\n") else "LF"


def eol_merge(checkout: Path, rel: str) -> tuple[bytes, str] | None:
    """The conflicted `rel` merged with CRLF read as LF, in the target's endings, and the evidence;
    None when no side has CRLF or the normalised merge conflicts too."""
    shown = [git("show", f":{n}:{rel}", cwd=checkout, text=False, check=False) for n in (1, 2, 3)]
    base, ours, theirs = (p.stdout if p.returncode == 0 else None for p in shown)
    if base is None or ours is None or theirs is None or not any(b"\r\n" in s for s in (base, ours, theirs)):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            (Path(tmp) / name).write_bytes(data.replace(b"\r\n", b"\n"))
            paths.append(str(Path(tmp) / name))
        proc = git("merge-file", "-p", "--quiet", *paths, cwd=checkout, text=False, check=False)
    if proc.returncode != 0:
        return None
    mine = _endings(ours)
    merged = proc.stdout.replace(b"\n", b"\r\n") if mine == "CRLF" else proc.stdout
    return merged, (
        f"{rel}: the conflict was only line endings (the pin's file {_endings(base)}, the target's {mine}): "
        f"merged with the target's {mine}"
    )


def settle(checkout: Path, patch: Patch, moved: dict[str, str], conflicted: list[str]) -> list[str]:
    """Settle every conflicted file (see the module) and return the evidence; [] when one cannot be
    settled, and then nothing is touched."""
    plan: list[tuple[str, bytes | None]] = []  # (file, merged bytes; None: keep the target's version)
    evidence: list[str] = []
    for rel in conflicted:
        fps = [fp for fp in patch.files if moved.get(fp.old_path or "", fp.old_path) == rel]
        head = git("show", f"HEAD:{rel}", cwd=checkout, text=False, check=False)
        text = head.stdout.decode(errors="replace") if head.returncode == 0 else None
        proofs = [present_evidence(fp, rel, text) for fp in fps] if fps and text is not None else [None]
        if all(proof is not None for proof in proofs):
            plan.append((rel, None))
            evidence += [f"already at the target: {line}" for proof in proofs for line in proof or []]
            continue
        merged = eol_merge(checkout, rel)
        if merged is None:
            return []
        plan.append((rel, merged[0]))
        evidence.append(merged[1])
    for rel, data in plan:
        if data is None:
            git("checkout", "HEAD", "--", rel, cwd=checkout)
        else:
            (checkout / rel).write_bytes(data)
            git("add", "--", rel, cwd=checkout)
    return evidence


SETDEFAULT = re.compile(r"(\w+)\.setdefault\(\s*(['\"])([^'\"]+)\2")


def own_words(fp: FilePatch, target: str) -> str:
    """A hint for a conflict the target may already settle in its own words: the patch adds
    `d.setdefault('k', ...)` and the target guards the key (`if 'k' not in d:`); "" otherwise."""
    for hunk in fp.hunks:
        for line in hunk.added:
            match = SETDEFAULT.search(line)
            if not match:
                continue
            var, key = match.group(1), match.group(3)
            guard = re.compile(rf"if\s+(['\"]){re.escape(key)}\1\s+not\s+in\s+{re.escape(var)}\b")
            for number, text in enumerate(target.splitlines(), 1):
                if guard.search(text):
                    return (
                        f"the target already guards the key: `{text.strip()}` (line {number}) where the "
                        f"patch writes `{var}.setdefault('{key}', …)`. If that is the patch's change in the "
                        "target's words, take the target's side and `nox -s rebase -- --skip`"
                    )
    return ""
