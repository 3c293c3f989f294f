"""Targets that overlap: a new upstream tree that tracks files where another target is checked out
(a fork vendoring `mmdetection3d/` where the nested mmdetection3d checkout lives) or where the
overlay lands. Found in the cache mirror before a rebase or `--check` writes anything."""

from __future__ import annotations

from pathlib import Path

from ..cache import mirror_path
from ..errors import OverlayError
from ..gitcmd import git, has_commit
from ..targets import CONFIG, Target

OVERLAP = "overlap"


def overlaps(target: Target, targets: list[Target], repo: Path, commit: str) -> list[dict]:
    """What `commit`'s tree (in `repo`) tracks under another target's checkout or an overlay
    destination; folders in the target's `outside` are left out of its checkout and do not count."""
    listing = git("ls-tree", "-r", "--name-only", "-z", commit, cwd=repo).stdout.split("\0")
    tracked = [p for p in listing if p and not any(p.startswith(f + "/") for f in target.outside)]
    found = []
    for other in targets:
        if other is target or not other.checkout.is_relative_to(target.checkout):
            continue
        rel = other.checkout.relative_to(target.checkout).as_posix()
        inside = [p for p in tracked if p.startswith(rel + "/")]
        if inside:
            found.append(
                {
                    "path": f"{rel}/",
                    "owner": other.name,
                    "count": len(inside),
                    "examples": inside[:5],
                    "vendored_commit": _vendored_commit(other, repo, commit, rel),
                    "against_pin": _against_pin(other, repo, commit, rel),
                }
            )
    shadowed = sorted(set(target.overlay_files()) & set(tracked))
    if shadowed:
        found.append(
            {"path": shadowed[0], "owner": "overlay", "count": len(shadowed), "examples": shadowed[:5],
             "vendored_commit": None}
        )  # fmt: skip
    return found


def _vendored_commit(other: Target, repo: Path, commit: str, rel: str) -> str | None:
    """The commit of `other`'s cache whose tree is exactly the copy `commit` vendors at `rel`."""
    tree = git("rev-parse", "--verify", "--quiet", f"{commit}:{rel}", cwd=repo, check=False).stdout.strip()
    mirror = mirror_path(other.pin)
    if not tree or not mirror.is_dir():
        return None
    log = git("log", "--all", "--format=%H %T", cwd=mirror, check=False).stdout
    return next((line.split()[0] for line in log.splitlines() if line.endswith(" " + tree)), None)


def _tree(repo: Path, treeish: str) -> dict[str, str]:
    """path → `mode sha` of every file under `treeish` in `repo` (empty when it is not there)."""
    out = git("ls-tree", "-r", "-z", treeish, cwd=repo, check=False)
    entries = {}
    for entry in out.stdout.split("\0") if out.returncode == 0 else []:
        if "\t" in entry:
            info, path = entry.split("\t", 1)
            mode, _, sha = info.split(" ")
            entries[path] = f"{mode} {sha}"
    return entries


def _against_pin(other: Target, repo: Path, commit: str, rel: str) -> dict | None:
    """The vendored copy at `rel` compared file by file with `other`'s pinned tree: `identical` (a
    count), `edited` and `added` (paths: what the fork changed, and what `outside` will ignore),
    `left_out` (a count of the pin's files the copy lacks); None when the cache lacks the pin."""
    mirror = mirror_path(other.pin)
    if not mirror.is_dir() or not has_commit(mirror, other.pin.commit):
        return None
    copy, pin = _tree(repo, f"{commit}:{rel}"), _tree(mirror, other.pin.commit)
    return {
        "pin": other.pin.commit,
        "identical": sum(1 for p, blob in copy.items() if pin.get(p) == blob),
        "edited": sorted(p for p in copy if p in pin and pin[p] != copy[p]),
        "added": sorted(p for p in copy if p not in pin),
        "left_out": sum(1 for p in pin if p not in copy),
    }


def _listed(paths: list[str], limit: int = 8) -> str:
    more = f" (+{len(paths) - limit} more)" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def _copy_line(owner: str, cmp: dict) -> str:
    """A pure subset of the pin, or a copy with edits (named): what keeping the nested checkout ignores."""
    counts = (
        f"{cmp['identical']} file(s) byte-identical to {owner}'s pin {cmp['pin'][:12]}, "
        f"{cmp['left_out']} of its files left out"
    )
    if not cmp["edited"] and not cmp["added"]:
        return (
            f"    the copy is a pure subset of the pin: {counts}, none edited or added; keeping the nested "
            "checkout loses nothing of it"
        )
    changes = [f"{len(cmp['edited'])} edited ({_listed(cmp['edited'])})"] if cmp["edited"] else []
    changes += [f"{len(cmp['added'])} added ({_listed(cmp['added'])})"] if cmp["added"] else []
    return (
        f"    the copy has the fork's own changes: {'; '.join(changes)}; {counts}. These are what `outside` "
        f"leaves out: carry them as {owner} patches if the fork needs them"
    )


def overlap_message(target: Target, commit: str, found: list[dict]) -> str:
    """What overlaps, and the choices."""
    lines = [f"{commit[:12]} tracks files where {target.label}'s checkout holds something else:"]
    for o in found:
        more = f" (+{o['count'] - len(o['examples'])} more)" if o["count"] > len(o["examples"]) else ""
        if o["owner"] == "overlay":
            lines.append(
                f"  {o['count']} overlay file(s) upstream now tracks: {', '.join(o['examples'])}{more}"
            )
        else:
            lines.append(
                f"  {o['count']} file(s) under {o['path']}, where the {o['owner']} target is checked out: "
                f"{', '.join(o['examples'])}{more}"
            )
            if o.get("against_pin"):
                lines.append(_copy_line(o["owner"], o["against_pin"]))
    lines.append("Nothing was written. Choose, then run the same command again:")
    for o in found:
        if o["owner"] == "overlay":
            lines.append(
                "  - overlay: move the overlay file(s) to paths upstream does not track (overlay/ only adds "
                "files), or delete them from overlay/ if upstream's copy does the same job."
            )
            continue
        folder = o["path"].rstrip("/")
        keep = f'outside = ["{folder}"]'
        lines.append(
            f"  - keep the {o['owner']} checkout: add `{keep}` to the [[target]] {target.name!r} of {CONFIG} "
            f"(the fork's copy stays out of the {target.label} checkout; {o['owner']} keeps its pin)."
        )
        if o["vendored_commit"]:
            lines.append(
                f"  - adopt the fork's copy: it is {o['owner']} {o['vendored_commit']} exactly; add "
                f"`{keep}` as above and pin {o['owner']} there: `nox -s rebase -- --target {o['owner']} "
                f"{o['vendored_commit']}`."
            )
        elif (cmp := o.get("against_pin")) and not cmp["edited"] and not cmp["added"]:
            lines.append(
                f"  - adopt the fork's copy: nothing to adopt, it is {o['owner']}'s pin less "
                f"{cmp['left_out']} file(s); keep the nested checkout."
            )
        else:
            lines.append(
                f"  - adopt the fork's copy: it matches no {o['owner']} commit in the cache (the fork "
                f"edited it): add `{keep}`, pin {o['owner']} to the commit it was copied from and carry "
                f"the fork's changes as {o['owner']} patches."
            )
    return "\n".join(lines)


def refuse_overlaps(target: Target, targets: list[Target], repo: Path, commit: str) -> None:
    """Raise naming the overlapping paths and the choices, before anything is written."""
    found = overlaps(target, targets, repo, commit)
    if found:
        raise OverlayError(overlap_message(target, commit, found))
