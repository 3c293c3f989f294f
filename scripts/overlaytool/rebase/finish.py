"""The project files a rebase changes (the target's `*.patch`, `series`, its pin), all or nothing: a
snapshot at the start (`--abort` restores it), the new series staged and checked, then written
(`publish`), the pin last (docs/rebase.md).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from ..atomic_write import remove_leftovers, replace_file
from ..checkout.gitdir import state_dir
from ..export.commit_export import export_commits
from ..faults import kill_point
from ..patchfile import parse_patch
from ..pins import Pin, load_pin, pin_text
from ..series import load_series, read_series
from ..targets import Target
from ..tree.series_index import build_result

STEP = "rebase"


def _snapshot_dir(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase-before"


def _stage_dir(target: Target) -> Path:
    return state_dir(target.checkout) / "rebase-stage"


def _series_files(patch_dir: Path) -> list[Path]:
    """The files of one patch directory a rebase may write: `series` and the `*.patch` files."""
    return sorted(
        p for p in patch_dir.iterdir() if p.is_file() and (p.name == "series" or p.suffix == ".patch")
    )


def _remove_tmp(target: Target) -> None:
    """The temporary files of a write a kill interrupted (before its rename)."""
    for folder in (target.patch_dir, target.pin.file.parent):
        remove_leftovers(folder)


def snapshot(target: Target) -> None:
    """Copy the series and the pin file aside, before anything of the rebase is written."""
    snap = _snapshot_dir(target)
    shutil.rmtree(snap, ignore_errors=True)
    (snap / "patches").mkdir(parents=True)
    for path in _series_files(target.patch_dir):
        shutil.copy2(path, snap / "patches" / path.name)
    shutil.copy2(target.pin.file, snap / "pin.toml")


def has_snapshot(target: Target) -> bool:
    """True when the rebase in progress copied the project files aside."""
    return (_snapshot_dir(target) / "pin.toml").is_file()


def old_patch_dir(target: Target) -> Path:
    """The series as it was when the rebase started."""
    return _snapshot_dir(target) / "patches"


def old_pin(target: Target) -> Pin:
    """The pin as it was when the rebase started (read from the snapshot, named as the real file)."""
    return replace(load_pin(_snapshot_dir(target) / "pin.toml"), file=target.pin.file)


def restore(target: Target) -> None:
    """Put the snapshot back exactly: series files it lacks are removed, the pin file last."""
    _remove_tmp(target)
    snap = old_patch_dir(target)
    keep = {p.name for p in snap.iterdir()}
    for path in _series_files(target.patch_dir):
        if path.name not in keep:
            path.unlink()
    for path in sorted(snap.iterdir()):
        dest = target.patch_dir / path.name
        if not dest.is_file() or dest.read_bytes() != path.read_bytes():
            replace_file(dest, path.read_bytes())
    pin = _snapshot_dir(target) / "pin.toml"
    if target.pin.file.read_bytes() != pin.read_bytes():
        replace_file(target.pin.file, pin.read_bytes())


def discard(target: Target) -> None:
    """Forget the snapshot and the staging directory (the rebase is over)."""
    shutil.rmtree(_snapshot_dir(target), ignore_errors=True)
    shutil.rmtree(_stage_dir(target), ignore_errors=True)


def stage(target: Target, series: Path, new_pin: Pin) -> Target:
    """Export the replayed commits (the checkout's HEAD) as the new series of ``series`` into the
    staging directory; return the staged target (the new pin, the staged series)."""
    stage_dir = _stage_dir(target)
    shutil.rmtree(stage_dir, ignore_errors=True)
    stage_dir.mkdir(parents=True)
    for path in _series_files(series):
        shutil.copy2(path, stage_dir / path.name)
    staged = replace(target, pin=new_pin, patch_dir=stage_dir)
    old_patches = [parse_patch(stage_dir / name) for name in read_series(stage_dir)]
    export_commits(staged, old_patches, base=new_pin.commit)
    kill_point(f"{STEP}:staged")
    return staged


def check(staged: Target) -> None:
    """Every check `apply` would make, on the staged series and the new pin (the overlay's references
    were checked by the replay); raises naming the problem."""
    patches = load_series(staged.patch_dir)  # the lint: one error listing every problem
    build_result(staged, patches, staged.overlay_files())  # exact fit, shadowing
    kill_point(f"{STEP}:checked")


def publish(target: Target, staged: Target, new_pin_text: str) -> None:
    """Write the staged series into `patches/`, then the pin: each file atomically, the pin last."""
    _remove_tmp(target)  # of a finish killed before (--continue)
    new = {p.name: p for p in _series_files(staged.patch_dir)}
    for name in sorted(new, key=lambda n: n == "series"):  # patches first, the series after them
        dest, data = target.patch_dir / name, new[name].read_bytes()
        if not dest.is_file() or dest.read_bytes() != data:
            replace_file(dest, data, step=f"{STEP}:write-{name}")
            kill_point(f"{STEP}:write-{name}")
    for path in _series_files(target.patch_dir):
        if path.name not in new:
            path.unlink()
            kill_point(f"{STEP}:delete-{path.name}")
    if target.pin.file.read_text(encoding="utf-8") != new_pin_text:
        replace_file(target.pin.file, new_pin_text, step=f"{STEP}:pin")
        kill_point(f"{STEP}:pin")


def new_pin_text(target: Target, commit: str, date: str, source: str | None) -> str:
    """The pin file for the new commit, from the snapshot's pin (comments and layout kept)."""
    return pin_text(replace(old_pin(target), file=_snapshot_dir(target) / "pin.toml"), commit, date, source)
