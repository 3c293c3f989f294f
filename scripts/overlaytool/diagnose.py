"""Hunk-level diagnosis: does each hunk of a patch sit exactly where it says, and if not, why."""

from __future__ import annotations

from collections.abc import Callable

from .patchfile import FilePatch, Hunk, Patch


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _find(lines: list[str], block: list[str]) -> list[int]:
    n = len(block)
    return [i for i in range(len(lines) - n + 1) if lines[i : i + n] == block] if n else []


def diagnose_hunk(fp: FilePatch, hunk: Hunk, lines: list[str]) -> str | None:
    """None when `hunk` matches `lines` at exactly its stated position, else the reason."""
    start = max(hunk.old_start - 1, 0)
    if lines[start : start + len(hunk.old_lines)] == hunk.old_lines:
        return None
    where = f"file {fp.path}, hunk {hunk.header}"
    found = _find(lines, hunk.old_lines)
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


def diagnose_patch(patch: Patch, read: Callable[[str], bytes | None]) -> str | None:
    """First reason `patch` would not apply exactly to the files `read` returns, or None."""
    deleted: set[str] = set()  # a type change (file <-> symlink) is a deletion, then a creation
    for fp in patch.files:
        if fp.old_path is None:
            if fp.path not in deleted and read(fp.path) is not None:
                return f"file {fp.path}: the patch creates it, but it already exists"
            continue
        if fp.new_path is None:
            deleted.add(fp.old_path)
        data = read(fp.old_path)
        if data is None:
            return f"file {fp.old_path}: missing file (the patch modifies it, upstream does not have it)"
        lines = _lines(data)
        for hunk in fp.hunks:
            if (reason := diagnose_hunk(fp, hunk, lines)) is not None:
                return reason
    return None
