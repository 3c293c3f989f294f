"""The kit's manifest and parts: verify every part by size and sha256, rebuild the files from them,
unpack the project's sources (stdlib only)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import IO

from .steps import CheckError

MANIFEST = "manifest.json"
FORMAT = 1


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(kit: Path) -> dict:
    try:
        manifest = json.loads((kit / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CheckError(f"{kit / MANIFEST}: unreadable ({exc}); is {kit} a gpu_check kit?") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise CheckError(f"{kit / MANIFEST}: format {got!r}, this runner reads {FORMAT}")
    problem = manifest_problem(manifest)
    if problem:
        raise CheckError(f"{kit / MANIFEST}: {problem}; refusing the kit, build it again")
    return manifest


def _plain_name(value: object) -> bool:
    """A file name of one component inside its folder: no separator, ``..``, or NUL."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and not any(c in value for c in "/\\\0")
        and Path(value).name == value
    )


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def manifest_problem(manifest: dict) -> str | None:
    """What makes ``manifest`` unusable (a name with ``/``, ``..`` or absolute, a size that is not a
    count, a malformed hash, a missing key), or None: no name it holds leaves the kit's folders."""
    if not _plain_name(manifest.get("parts_dir")):
        return f"parts_dir {manifest.get('parts_dir')!r} is not a plain folder name"
    files = manifest.get("files")
    if not isinstance(files, list):
        return "files is not a list"
    for i, entry in enumerate(files):
        parts = entry.get("parts") if isinstance(entry, dict) else None
        if not isinstance(parts, list) or not parts:
            return f"files[{i}] has no parts"
        named = [(f"files[{i}]", entry), *((f"files[{i}].parts[{k}]", p) for k, p in enumerate(parts))]
        for where, item in named:
            if not isinstance(item, dict):
                return f"{where} is not an object"
            if not _plain_name(item.get("name")):
                return f"{where}: name {item.get('name')!r} is not a plain file name"
            if not _count(item.get("size")) or not _digest(item.get("sha256")):
                return f"{where}: size or sha256 missing or malformed"
            if "bundle" in item and not _plain_name(item["bundle"]):
                return f"{where}: bundle {item['bundle']!r} is not a plain folder name"
    locks = manifest.get("locks", {})
    if not isinstance(locks, dict) or not all(isinstance(k, str) and _plain_name(locks[k]) for k in locks):
        return f"locks {locks!r} does not map python tags to plain file names"
    if "source" in manifest and not _plain_name(manifest["source"]):
        return f"source {manifest['source']!r} is not a plain file name"
    if "dali_cuda" in manifest and not _count(manifest["dali_cuda"]):
        return f"dali_cuda {manifest['dali_cuda']!r} is not a CUDA major version"
    if not isinstance(manifest.get("parts_beside", False), bool):
        return f"parts_beside {manifest['parts_beside']!r} is not true or false"
    stack = manifest.get("stack", {})
    names = [stack.get(k) for k in ("nodeps", "source_built", "applied", "applied_facts")] if stack else []
    if not isinstance(stack, dict) or not all(_plain_name(n) for n in names):
        return "stack does not name its files by plain file names"
    return None


def parts_root(kit: Path, manifest: dict) -> Path:
    """Where the parts are: ``<kit>/<parts_dir>``, or beside the kit folder (``parts_beside``: a stack
    kit's bundles, each a folder of its own next to the runner's)."""
    return (kit.parent if manifest.get("parts_beside") else kit) / manifest["parts_dir"]


def part_path(root: Path, part: dict) -> Path:
    return root / part["bundle"] / part["name"] if "bundle" in part else root / part["name"]


def verify_part(part: Path, want: dict) -> None:
    """Refuse a missing part, or one whose size or sha256 differs from the manifest, naming it."""
    if not part.is_file():
        raise CheckError(f"part {part.name} is missing from {part.parent}; copy it again")
    size = part.stat().st_size
    if size != want["size"]:
        raise CheckError(f"part {part.name}: {size} bytes, the manifest says {want['size']}; copy it again")
    digest = sha256(part)
    if digest != want["sha256"]:
        raise CheckError(
            f"part {part.name}: sha256 {digest} != manifest {want['sha256']}; refusing it, copy it again"
        )


def reassemble(
    kit: Path,
    manifest: dict,
    wheels: Path,
    other: Path,
    only: set[str] | None = None,
    root: Path | None = None,
) -> list[Path]:
    """Every file of the manifest (``only``: those named) rebuilt from its verified parts, then
    verified whole: the wheels under ``wheels`` (pip's --find-links), the rest under ``other``. The
    parts are looked up under ``root`` (default: :func:`parts_root`)."""
    root = root or parts_root(kit, manifest)
    out = []
    for entry in manifest["files"]:
        if only is not None and entry["name"] not in only:
            continue
        dest = wheels if entry["name"].endswith(".whl") else other
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / entry["name"]
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        for want in entry["parts"]:
            verify_part(part_path(root, want), want)
        first = part_path(root, entry["parts"][0])
        if len(entry["parts"]) == 1 and entry["parts"][0]["sha256"] == entry["sha256"]:
            link_or_copy(first, partial)  # the part is the file, verified above
        else:
            with partial.open("wb") as fh:
                for want in entry["parts"]:
                    with part_path(root, want).open("rb") as src:
                        shutil.copyfileobj(src, fh, 1 << 20)
        digest = sha256(partial) if len(entry["parts"]) > 1 else entry["sha256"]
        if digest != entry["sha256"]:
            partial.unlink()
            raise CheckError(f"{entry['name']}: reassembled sha256 {digest} != manifest {entry['sha256']}")
        if target.exists() and target.samefile(partial):  # linked from the same part before: rename()
            partial.unlink()  # of two links to one file does nothing, and would leave the .partial
        else:
            partial.replace(target)
        out.append(target)
    return out


def link_or_copy(src: Path, dest: Path) -> None:
    """A hard link where the file system allows (the kit's parts stay untouched: pip only reads)."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def unpack(archive: Path | IO[bytes], dest: Path) -> None:
    """Extract a tar archive (a path or an open binary file) into `dest` with the "data" filter: no
    absolute or escaping paths, no links out of `dest`, no devices. Pythons before 3.11.4 (Debian 12's
    3.11.2) lack the filter (PEP 706); there each member is checked the same way first."""
    with tarfile.open(archive) if isinstance(archive, Path) else tarfile.open(fileobj=archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
            return
        root = dest.resolve()
        for member in tar.getmembers():
            _check_member(member, root, getattr(archive, "name", "the archive"))
        tar.extractall(dest)  # noqa: S202 (every member checked above)


def _check_member(member: tarfile.TarInfo, root: Path, archive: str) -> None:
    """`tarfile.data_filter`'s refusals, for Pythons that lack it: a named error per bad member."""
    target = (root / member.name).resolve()
    problem = None
    if member.name.startswith("/") or not target.is_relative_to(root):
        problem = "a path outside the destination"
    elif not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        problem = "not a file, folder or link"
    elif member.issym() and not (target.parent / member.linkname).resolve().is_relative_to(root):
        problem = f"a symlink out of the destination ({member.linkname})"
    elif member.islnk() and not (root / member.linkname).resolve().is_relative_to(root):
        problem = f"a hard link out of the destination ({member.linkname})"
    if problem:
        raise tarfile.TarError(f"{archive}: member {member.name!r} is {problem}; not extracting it")
