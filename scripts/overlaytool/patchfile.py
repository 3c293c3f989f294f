"""One patch file of a series: a `git format-patch` file with a DEP-3 header, parsed into hunks (bytes
kept exactly: surrogate escapes), and why a hunk does not sit exactly where it says (`diagnose_patch`).
"""

from __future__ import annotations

import email.header
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .overlay import Blob

FILENAME_TRAILER = "Patch-Filename"
FILENAME_RE = re.compile(rf"(?m)^{FILENAME_TRAILER}:[ \t]*(\S*)[ \t]*$")


def decode(data: bytes) -> str:
    """Text of a patch or series file: UTF-8, any other byte kept as a surrogate escape."""
    return data.decode("utf-8", errors="surrogateescape")


def encode(text: str) -> bytes:
    """The inverse of `decode`: the exact bytes again."""
    return text.encode("utf-8", errors="surrogateescape")


def filename_trailer(message: str) -> str | None:
    """The file name a commit message or patch header names in its `Patch-Filename:` trailer."""
    found = FILENAME_RE.findall(message)
    return found[-1] if found else None


HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    """One hunk: its header, the lines it expects (old), and the lines it removes and adds."""

    header: str
    old_start: int
    old_lines: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # the `-` lines alone
    added: list[str] = field(default_factory=list)  # the `+` lines alone


@dataclass
class FilePatch:
    """The part of a patch that touches one file."""

    old_path: str | None  # None for a new file
    new_path: str | None  # None for a deleted file
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass
class Patch:
    """A patch file of the series: header (everything before the diff) and the per-file diffs."""

    name: str
    path: Path
    header: str
    subject: str | None
    files: list[FilePatch]

    @property
    def text(self) -> bytes:
        return self.path.read_bytes()

    @property
    def filename(self) -> str | None:
        """The name its `Patch-Filename:` trailer gives (None for a patch without one)."""
        return filename_trailer(self.header)


def _strip_prefix(path: str) -> str | None:
    if path == "/dev/null":
        return None
    path = path.split("\t")[0]
    return path[2:] if path[:2] in ("a/", "b/") else path


def _subject(header: list[str]) -> str | None:
    """The `Subject:` of a mail header (folded lines joined, RFC 2047 words decoded), `[PATCH]` dropped."""
    for i, line in enumerate(header):
        if line.startswith("Subject:"):
            value = line[len("Subject:") :]
            for more in header[i + 1 :]:
                if not more[:1].isspace():
                    break
                value += more
            text = str(email.header.make_header(email.header.decode_header(value.strip())))
            return re.sub(r"^\[PATCH[^\]]*\]\s*", "", text)
    return None


def parse_patch(path: Path) -> Patch:
    """Split a git format-patch file into its header and per-file hunks."""
    lines = decode(path.read_bytes()).split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("diff --git ")), len(lines))
    header = "\n".join(lines[:start])
    subject = _subject(lines[:start])
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    for line in lines[start:]:
        if line.startswith("diff --git "):
            current, hunk = FilePatch(None, None), None
            files.append(current)
            parts = line.split(" ")
            current.old_path, current.new_path = _strip_prefix(parts[2]), _strip_prefix(parts[3])
        elif current is None:
            continue
        elif hunk is None and line.startswith("--- "):
            current.old_path = _strip_prefix(line[4:])
        elif hunk is None and line.startswith("+++ "):
            current.new_path = _strip_prefix(line[4:])
        elif hunk is None and line.startswith("new file mode"):
            current.old_path = None
        elif hunk is None and line.startswith("deleted file mode"):
            current.new_path = None
        elif m := HUNK_RE.match(line):
            hunk = Hunk(header=line, old_start=int(m.group(1)))
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            if line[:1] in (" ", "-"):
                hunk.old_lines.append(line[1:])
            if line[:1] != " ":
                (hunk.removed if line[:1] == "-" else hunk.added).append(line[1:])
        elif line == "-- ":
            break  # format-patch signature separator
    return Patch(name=path.name, path=path, header=header, subject=subject, files=files)


def _lines(data: bytes) -> list[str]:
    lines = decode(data).split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def diagnose_hunk(fp: FilePatch, hunk: Hunk, lines: list[str]) -> str | None:
    """None when `hunk` matches `lines` at exactly its stated position, else the reason."""
    start = max(hunk.old_start - 1, 0)
    if lines[start : start + len(hunk.old_lines)] == hunk.old_lines:
        return None
    where = f"file {fp.path}, hunk {hunk.header}"
    n = len(hunk.old_lines)
    found = [i for i in range(len(lines) - n + 1) if lines[i : i + n] == hunk.old_lines] if n else []
    if found:
        offsets = ", ".join(f"{i - start:+d}" for i in found[:3])
        return f"{where}: offset — the context is found {offsets} lines away (zero offset required)"
    for k, expected in enumerate(hunk.old_lines):
        actual = lines[start + k] if start + k < len(lines) else "<end of file>"
        if actual != expected:
            return (
                f"{where}: context changed at line {start + k + 1}:\n"
                f"    patch expects: {expected!r}\n    upstream has:  {actual!r}"
            )
    return f"{where}: context changed"


def diagnose_patch(patch: Patch, read: Callable[[str], Blob | None]) -> str | None:
    """First reason `patch` would not apply exactly to the files `read` returns, or None."""
    deleted: set[str] = set()  # a type change (file <-> symlink) is a deletion, then a creation
    for fp in patch.files:
        if fp.old_path is None:
            if fp.path not in deleted and read(fp.path) is not None:
                return f"file {fp.path}: the patch creates it, but it already exists"
            continue
        if fp.new_path is None:
            deleted.add(fp.old_path)
        blob = read(fp.old_path)
        if blob is None:
            return f"file {fp.old_path}: missing file (the patch modifies it, upstream does not have it)"
        lines = _lines(blob.data)
        for hunk in fp.hunks:
            if (reason := diagnose_hunk(fp, hunk, lines)) is not None:
                return reason
    return None
