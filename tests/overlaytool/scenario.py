"""The scenario the fault, concurrency and mode tests share.

Version 1: a pin with an executable script and a symlink; a series that edits a file, edits the
executable (keeping +x), changes a mode and deletes a file; an overlay with a plain file, an
executable and a symlink. Version 2: the pin moves one commit on, one patch is rewritten, two are
dropped, overlay files are swapped.
"""

from __future__ import annotations

import json
from pathlib import Path

from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, patched, tree_state

SH = '#!/bin/sh\nexec python tools/train.py "$@"\n'
UPSTREAM = {
    "tools/train.py": TRAIN_PY,
    "README.md": "upstream\n",
    "tools/dist_train.sh": SH,
    "old.py": "old\n",
}
UPSTREAM_EXEC = ["tools/dist_train.sh"]
UPSTREAM_LINKS = {"configs/latest.py": "../tools/train.py"}


def patch_texts(tmp: Path) -> dict[str, str]:
    """The patches of both series versions (real git format-patch), made in `tmp`."""
    both = {"executable": UPSTREAM_EXEC, "base_executable": UPSTREAM_EXEC, "base_links": UPSTREAM_LINKS}
    train = {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}
    train_v2 = {"tools/train.py": patched(TRAIN_PY, 10, "DALI v2")}
    mode = {
        "executable": [*UPSTREAM_EXEC, "README.md"],
        "base_executable": UPSTREAM_EXEC,
        "base_links": UPSTREAM_LINKS,
    }
    return {
        "use-dali.patch": make_patch(tmp, UPSTREAM, train, "DALI", **both),
        "launcher.patch": make_patch(
            tmp, UPSTREAM, {"tools/dist_train.sh": SH + "# gloo\n"}, "Launch", **both
        ),
        "exec-readme.patch": make_patch(tmp, UPSTREAM, {}, "Mode", **mode),
        "drop-old.patch": make_patch(tmp, UPSTREAM, {"old.py": None}, "Drop old", **both),
        "use-dali-v2.patch": make_patch(tmp, UPSTREAM, train_v2, "DALI", **both),
    }


def configure_v1(project: Project, texts: dict[str, str]) -> None:
    """Pin with an executable script and a symlink; patches that edit, keep +x, change a mode, delete;
    an overlay with a plain file, an executable and a symlink."""
    project.pin = commit_files(project.upstream, UPSTREAM, "scripts", UPSTREAM_EXEC, UPSTREAM_LINKS)
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    for name in ("use-dali.patch", "launcher.patch", "exec-readme.patch", "drop-old.patch"):
        project.add_patch(name, texts[name])
    overlay = project.root / "overlay"
    (overlay / "bin").mkdir()
    (overlay / "bin" / "run.sh").write_text(SH)
    (overlay / "bin" / "run.sh").chmod(0o755)
    (overlay / "cfg.py").write_text("a = 1\n")
    (overlay / "link.py").symlink_to("cfg.py")


def configure_v2(project: Project, texts: dict[str, str]) -> None:
    """Move the pin one commit on, rewrite one patch, drop two, swap overlay files."""
    old_pin = project.pin
    project.pin = commit_files(project.upstream, {"docs/new.md": "docs\n"}, "Docs")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(old_pin, project.pin))
    patches = project.patch_dir
    (patches / "use-dali.patch").write_text(texts["use-dali-v2.patch"])
    for name in ("launcher.patch", "drop-old.patch"):
        (patches / name).unlink()
    (patches / "series").write_text("use-dali.patch\nexec-readme.patch\n")
    (project.root / "overlay" / "bin" / "run.sh").unlink()
    (project.root / "overlay" / "new.py").write_text("new = 1\n")


def edit_by_hand(project: Project) -> None:
    """Edits apply refuses without --force: a patched file, a deleted overlay file, a hand commit."""
    checkout = project.checkout
    (checkout / "tools" / "train.py").write_text("my edit\n")
    (checkout / "cfg.py").unlink()
    (checkout / "mine.py").write_text("mine\n")
    git(checkout, "add", "mine.py")
    git(checkout, "commit", "-q", "-m", "My commit")


def observed(project: Project) -> dict:
    """Everything a clean apply determines, compared across projects."""
    checkout = project.checkout
    stray = sorted(p.name for p in checkout.parent.iterdir() if p.name.startswith(f".{checkout.name}."))
    stray += sorted(p.name for p in checkout.glob(".git/streampetr-dali/clone-*"))  # nested checkouts'
    stray += sorted(
        p.name for p in project.cache.glob("mirrors/*") if ".partial-" in p.name or ".old-" in p.name
    )
    return {
        "tree": tree_state(checkout),
        "status": git(checkout, "status", "--porcelain", "--untracked-files=all"),
        "head": git(checkout, "rev-parse", "HEAD"),
        "journal": [p.name for p in checkout.rglob("journal.json")],
        "stamps": [json.loads(p.read_text()) for p in sorted(checkout.rglob("stamp.json"))],
        "stray": stray,
    }
