"""Where StreamPETR's code sits in an applied checkout: the folder holding `projects/mmdet3d_plugin`
(the root, or where a fork moved it; docs/rebase.md). Looked for where `overlay_moves` puts the
overlay's `projects/`, then at the root, then anywhere in the checkout's tree.
"""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path

from ..errors import OverlayError
from ..gitcmd import git
from ..overlay import place
from ..targets import REPO_ROOT, Target, load_targets
from .stamp import read_stamp

PLUGIN = "projects/mmdet3d_plugin"


def _looked_at(moves: tuple[tuple[str, str], ...]) -> list[str]:
    """Where the plugin is looked for first: where `overlay_moves` put the overlay's `projects/`, then
    the root (folders relative to the checkout)."""
    moved = posixpath.dirname(posixpath.dirname(place(f"{PLUGIN}/__init__.py", moves)))
    return [moved, ""] if moved else [""]


def code_root_in(files: set[str], moves: tuple[tuple[str, str], ...]) -> str:
    """:func:`code_root` of a tree given as its files (before any apply), relative to the checkout;
    the root when the tree has no plugin."""
    for rel in _looked_at(moves):
        if posixpath.join(rel, PLUGIN, "__init__.py") in files:
            return rel
    return _shallowest_plugin(files)


def _shallowest_plugin(files: set[str] | list[str]) -> str:
    """The shallowest folder below the root of the tree `files` that holds the plugin; "" if none."""
    suffix = f"/{PLUGIN}/__init__.py"
    found = sorted((p[: -len(suffix)] for p in files if p.endswith(suffix)), key=lambda p: (p.count("/"), p))
    return found[0] if found else ""


def code_root(target: Target) -> Path:
    """The folder of the applied checkout that holds `projects/mmdet3d_plugin` (what goes on
    `sys.path`); an applied checkout without it is an error naming where it looked."""
    checkout = target.checkout
    if not (checkout / ".git").exists() or read_stamp(checkout) is None:
        raise OverlayError(f"{checkout} is not an applied {target.label} checkout; run `nox -s apply`")
    looked = _looked_at(target.overlay_moves)
    for rel in looked:
        if (checkout / rel / PLUGIN).is_dir():
            return checkout / rel if rel else checkout
    found = _shallowest_plugin(git("ls-files", "-z", cwd=checkout).stdout.split("\0"))
    if found:
        return checkout / found
    where = ", ".join(f"{posixpath.join(r, PLUGIN) if r else PLUGIN}/" for r in looked)
    raise OverlayError(
        f"{checkout} is applied, but holds no {PLUGIN} (looked at {where} and every folder of its tree): "
        f"its commit {target.pin.commit[:12]} does not have StreamPETR's plugin package where the tools "
        "look for it. If the fork moved it, place the overlay beside it with `overlay_moves` in "
        "patches/config.toml (docs/rebase.md), then `nox -s apply`."
    )


def streampetr_code_root(root: Path = REPO_ROOT) -> Path:
    """:func:`code_root` of the project's StreamPETR target, with `tools/train.py` beside it. A tree with
    both where :func:`code_root` looks first is taken without git (the GPU stack kit has no `.git`)."""
    target = load_targets(root)[0]
    for rel in _looked_at(target.overlay_moves):  # also an applied tree without git: the stack kit's
        code = target.checkout / rel if rel else target.checkout
        if (code / PLUGIN).is_dir() and (code / "tools" / "train.py").is_file():
            return code
    code = code_root(target)  # unapplied: says so; else the plugin wherever it is
    if not (code / "tools" / "train.py").is_file():
        raise OverlayError(
            f"{target.checkout} is applied, but {code / 'tools' / 'train.py'} is missing: the runners run "
            "tools/ beside projects/. Place the overlay's tools/ there with `overlay_moves` in "
            "patches/config.toml (docs/rebase.md), then `nox -s apply`."
        )
    return code


def require_code_root(tool: str, root: Path = REPO_ROOT) -> Path:
    """:func:`streampetr_code_root`, for a command line: where it is not there (unapplied, or without
    `tools/` beside `projects/`), the reason prefixed with ``tool`` on stderr and exit status 2."""
    try:
        return streampetr_code_root(root)
    except OverlayError as exc:
        print(f"{tool}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
