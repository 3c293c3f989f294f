"""What `apply` manages: each pinned repository with its checkout, patch series and overlay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .pins import Pin, load_pin

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Target:
    """A pinned upstream, where it is checked out, and what goes on top of it."""

    pin: Pin
    checkout: Path
    patch_dir: Path
    overlay_dir: Path | None

    @property
    def label(self) -> str:
        return self.pin.name


def load_targets(root: Path = REPO_ROOT) -> list[Target]:
    """StreamPETR first (its checkout contains mmdetection3d's), then mmdetection3d."""
    streampetr = load_pin(root / "upstream" / "streampetr.toml")
    mmdet3d = load_pin(root / "upstream" / "mmdetection3d.toml")
    return [
        Target(streampetr, root / streampetr.checkout, root / "patches", root / "overlay"),
        Target(mmdet3d, root / mmdet3d.checkout, root / "patches" / "mmdetection3d", None),
    ]
