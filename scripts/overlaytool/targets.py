"""The patch targets, read from `patches/config.toml`: each pinned upstream with its series and overlay
(docs/patches.md). A listed target whose folder or series file is missing is an error naming it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from .cache import is_cached, mirror_lock, mirror_path
from .errors import OverlayError
from .gitcmd import has_commit
from .overlay import overlay_files
from .pins import Pin, load_pin, read_toml

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path("patches") / "config.toml"
KEYS = {"name", "pin", "patches", "overlay", "overlay_moves", "outside"}


@dataclass(frozen=True)
class Target:
    """A pinned upstream, where it is checked out, and what goes on top of it."""

    name: str
    pin: Pin
    checkout: Path
    patch_dir: Path
    overlay_dir: Path | None
    overlay_moves: tuple[tuple[str, str], ...] = ()  # overlay folder → where it lands upstream
    outside: tuple[str, ...] = ()  # folders of the upstream tree left out of the checkout
    root: Path | None = None  # the project root whose patches/config.toml lists it (its other targets)

    @property
    def label(self) -> str:
        return self.pin.name

    def overlay_files(self) -> dict[str, Path]:
        """The overlay's files by where they land in the upstream tree (its `overlay_moves` applied)."""
        return overlay_files(self.overlay_dir, self.overlay_moves)

    def mirror_read_lock(self, holder: str) -> AbstractContextManager[None]:
        """The shared lock of the pin's cache mirror while ``holder`` reads it: no fetch swaps it."""
        return mirror_lock(self.pin, holder, shared=True)

    def pinned_repo(self) -> Path:
        """A git repository holding the pinned commit: the cache mirror, else the checkout;
        `OverlayError` naming both where neither holds it."""
        pin, mirror = self.pin, mirror_path(self.pin)
        for repo in (mirror, self.checkout):
            if repo.exists() and has_commit(repo, pin.commit):
                return repo
        raise OverlayError(
            f"{pin.name} {pin.tag or ''} ({pin.commit}) is neither in the local upstream cache ({mirror}) "
            f"nor checked out at {pin.checkout}. Run `nox -s fetch` (or `nox -s apply`) first."
        )


def _inside(root: Path, config: Path, where: str, key: str, value: object) -> Path:
    """`value` as a path inside the project root; anything else is an error naming the key."""
    if not isinstance(value, str) or not value.strip():
        raise OverlayError(f"{config}: {where}: key '{key}' is missing or not a non-empty string")
    if "\0" in value or Path(value).is_absolute() or ".." in Path(value).parts:
        raise OverlayError(f"{config}: {where}: key '{key}' must be a path inside the project, got {value!r}")
    return root / value


def _target(root: Path, config: Path, number: int, entry: object) -> Target:
    where = f"target {number}"
    if not isinstance(entry, dict):
        raise OverlayError(f"{config}: {where} is not a table ([[target]])")
    if isinstance(entry.get("name"), str):
        where = f"target {number} ({entry['name']!r})"
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        raise OverlayError(
            f"{config}: {where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise OverlayError(f"{config}: {where}: key 'name' is missing or not a non-empty string")
    pin = load_pin(_inside(root, config, where, "pin", entry.get("pin")))
    patch_dir = _inside(root, config, where, "patches", entry.get("patches"))
    if not patch_dir.is_dir():
        raise OverlayError(f"{config}: {where}: the patch folder {patch_dir} does not exist (key 'patches')")
    if not (patch_dir / "series").is_file():
        raise OverlayError(
            f"{config}: {where}: {patch_dir / 'series'} does not exist; every target needs its series "
            "file (an empty one for a target without patches)"
        )
    overlay = entry.get("overlay")
    overlay_dir = None if overlay is None else _inside(root, config, where, "overlay", overlay)
    if overlay_dir is not None and not overlay_dir.is_dir():
        raise OverlayError(
            f"{config}: {where}: the overlay folder {overlay_dir} does not exist (key 'overlay')"
        )
    moves = entry.get("overlay_moves", {})
    if not isinstance(moves, dict) or not all(_folder(k) and _folder(v) for k, v in moves.items()):
        raise OverlayError(
            f"{config}: {where}: key 'overlay_moves' must be a table of folder = folder (relative paths "
            f'without "..", e.g. tools = "src/tools"), got {moves!r}'
        )
    outside = entry.get("outside", [])
    if not isinstance(outside, list) or not all(_folder(p) for p in outside):
        raise OverlayError(
            f"{config}: {where}: key 'outside' must be a list of folders of the upstream tree "
            f'(relative paths without "..", e.g. ["mmdetection3d"]), got {outside!r}'
        )
    folders = tuple(p.strip("/") for p in outside)
    moved = tuple((k.strip("/"), v.strip("/")) for k, v in moves.items())
    return Target(name, pin, root / pin.checkout, patch_dir, overlay_dir, moved, folders, root)


def _folder(value: object) -> bool:
    """A relative folder path inside a tree."""
    if not isinstance(value, str) or not value.strip("/ ") or value.startswith("/"):
        return False
    return ".." not in Path(value).parts and "." not in Path(value).parts


def load_targets(root: Path = REPO_ROOT) -> list[Target]:
    """Every target of `patches/config.toml`, in its order; every problem names the file and the key."""
    config = root / CONFIG
    data = read_toml(config, "the target list is missing")
    entries = data.get("target")
    if not isinstance(entries, list) or not entries:
        raise OverlayError(f"{config}: lists no target (one [[target]] table per patched upstream)")
    extra = sorted(set(data) - {"target"})
    if extra:
        raise OverlayError(f"{config}: unknown top-level key(s) {', '.join(extra)} (only [[target]] tables)")
    targets = [_target(root, config, i, entry) for i, entry in enumerate(entries, 1)]
    for key in ("name", "patch_dir", "checkout"):
        values = [getattr(t, key) for t in targets]
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:
            raise OverlayError(f"{config}: two targets share the {key.replace('_dir', '')} {twice[0]}")
    return targets


def select(targets: list[Target], names: list[str] | None) -> list[Target]:
    """The targets `--target` names (all of them when none is named), in the config's order."""
    if not names:
        return targets
    known = {t.name: t for t in targets}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise OverlayError(f"unknown target {unknown[0]!r}: {CONFIG} lists {', '.join(known)}")
    return [t for t in targets if t.name in names]


def missing_pins(root: Path = REPO_ROOT) -> list[str]:
    """The names of the pins the local upstream cache lacks (the upstream and stack tiers need each)."""
    return [t.pin.name for t in load_targets(root) if not is_cached(t.pin)]


def select_one(targets: list[Target], name: str | None) -> Target:
    """The target `--target` names, else the first of the config (StreamPETR)."""
    return select(targets, [name])[0] if name else targets[0]
