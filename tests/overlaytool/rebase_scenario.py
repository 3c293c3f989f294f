"""A small project for the rebase tests: two patched files, an overlay, and upstream targets that
move the patched files (into `src/`), move one and edit it, or move one and rewrite it."""

from __future__ import annotations

import json
from pathlib import Path

from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, patched, tree_state

HEADER = "".join(f"# Model, part {i} of the header that every version keeps.\n" for i in range(1, 5))
MODEL = "".join(f"def layer_{i}(x):\n    return x + {i}\n\n" for i in range(1, 9)) + HEADER
BASE = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n", "pkg/model.py": MODEL}
OURS_MODEL = patched(MODEL, 5, "    return x * 2  # ours")
MODEL_EDIT = patched(MODEL, 5, "    return 0  # theirs")  # upstream edits the line model.patch changes


def setup_series(project: Project, tmp: Path) -> Project:
    """Pin with train.py and pkg/model.py; one patch each; an overlay file; applied."""
    project.pin = commit_files(project.upstream, BASE, "model")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    train = {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}
    project.add_patch("use-dali.patch", make_patch(tmp, BASE, train, "Use DALI"))
    project.add_patch("model.patch", make_patch(tmp, BASE, {"pkg/model.py": OURS_MODEL}, "Faster layer"))
    (project.root / "overlay" / "dali").mkdir()
    (project.root / "overlay" / "dali" / "loader.py").write_text("LOADER = 1\n")
    assert project.run("apply") == 0
    return project


def move_into_src(project: Project, edit_model: str | None = None) -> str:
    """Upstream moves every patched file under `src/` (optionally editing model.py as it does)."""
    for rel in ("tools/train.py", "pkg/model.py"):
        (project.upstream / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        git(project.upstream, "mv", rel, f"src/{rel}")
    if edit_model is not None:
        (project.upstream / "src" / "pkg" / "model.py").write_text(edit_model)
    git(project.upstream, "add", "-A")
    git(project.upstream, "commit", "-q", "-m", "Move sources under src/")
    return git(project.upstream, "rev-parse", "HEAD").strip()


def rewrite_model(project: Project) -> str:
    """Upstream moves model.py and rewrites it beyond rename detection (a class, other names)."""
    methods = "".join(f"    def layer_{i}(self, x):\n        return x - {i}\n\n" for i in range(1, 9))
    rewritten = "class Model:\n" + methods + HEADER
    git(project.upstream, "rm", "-q", "pkg/model.py")
    return commit_files(project.upstream, {"src/pkg/model_v2.py": rewritten}, "Rewrite the model")


def project_state(project: Project) -> dict:
    """Everything a rebase may touch: patches/, the pin, the checkout, the reports, the cache's refs."""
    mirror = project.cache / "mirrors" / "exiawsh+StreamPETR.git"
    return {
        "patches": {p.name: p.read_bytes() for p in (project.patch_dir).glob("*") if p.is_file()},
        "pin": (project.root / "upstream" / "streampetr.toml").read_bytes(),
        "upstream_dir": sorted(p.name for p in (project.root / "upstream").iterdir()),
        "tree": tree_state(project.checkout),
        "head": git(project.checkout, "rev-parse", "HEAD"),
        "status": git(project.checkout, "status", "--porcelain", "--untracked-files=all"),
        "stamp": json.loads(next(project.checkout.glob(".git/streampetr-dali/stamp.json")).read_text()),
        "rebase_state": sorted(p.name for p in project.checkout.glob(".git/streampetr-dali/rebase*")),
        "cache_refs": git(mirror, "for-each-ref", "--format=%(refname) %(objectname)"),
    }


def patch_paths(project: Project, name: str) -> list[str]:
    """The `diff --git` lines of a patch of the series."""
    text = (project.patch_dir / name).read_text()
    return [line for line in text.splitlines() if line.startswith("diff --git ")]


def vendor_mmdetection3d(project: Project, edit: bool = False) -> str:
    """A fork that tracks its own copy of the nested mmdetection3d checkout under `mmdetection3d/`:
    the pinned mmdetection3d tree exactly, or (`edit`) with the fork's own change."""
    files = {
        f"mmdetection3d/{rel}": git(project.mmdet3d, "show", f"HEAD:{rel}")
        for rel in git(project.mmdet3d, "ls-files").split()
    }
    if edit:
        files["mmdetection3d/mmdet3d/__init__.py"] = "x = 2  # the fork's\n"
        files["mmdetection3d/configs/fork.py"] = "fork = 1\n"
    return commit_files(project.upstream, files, "Vendor mmdetection3d")


TRAIN_SCRIPT = "".join(f"step_{i} = {i}\n" for i in range(1, 41))
BASE_CONFIG = "model = dict(type='StreamPETR')\n"
SRC_FORK_BASE = {"tools/train.py": TRAIN_SCRIPT, "projects/configs/StreamPETR/r50.py": BASE_CONFIG}


def setup_src_fork_series(project: Project, tmp: Path) -> Project:
    """The overlay builds on upstream: a config `_base_`s on upstream's, the patched `tools/train.py`
    imports `slurm_env` from its own folder (an overlay file), and a patch names an overlay config."""
    project.pin = commit_files(project.upstream, SRC_FORK_BASE, "configs")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    train = patched(TRAIN_SCRIPT, 10, "from slurm_env import export_env  # tools/slurm_env.py")
    train = patched(train, 20, "DEFAULT = 'projects/configs/dali/r50_dali.py'")
    train = patched(train, 30, "import inspect  # the stdlib's, not the overlay's dali/inspect.py")
    project.add_patch("use-dali.patch", make_patch(tmp, SRC_FORK_BASE, {"tools/train.py": train}, "Use DALI"))
    overlay = project.root / "overlay"
    (overlay / "tools").mkdir()
    (overlay / "tools" / "slurm_env.py").write_text("def export_env():\n    return {}\n")
    (overlay / "dali").mkdir()
    (overlay / "dali" / "inspect.py").write_text("SHOW = 1\n")
    (overlay / "projects" / "configs" / "dali").mkdir(parents=True)
    (overlay / "projects" / "configs" / "dali" / "r50_dali.py").write_text(
        '_base_ = ["../StreamPETR/r50.py"]\nuse_dali_pipeline = True\n'
    )
    assert project.run("apply") == 0
    return project


def move_everything_under_src(project: Project) -> str:
    """The fork moves every source under `src/` (the configs the overlay bases on too)."""
    for top in ("tools", "projects"):
        (project.upstream / "src").mkdir(exist_ok=True)
        git(project.upstream, "mv", top, f"src/{top}")
    git(project.upstream, "commit", "-q", "-m", "Move every source under src/")
    return git(project.upstream, "rev-parse", "HEAD").strip()


def set_target_keys(project: Project, lines: str) -> None:
    """Add TOML `lines` to the streampetr [[target]] of patches/config.toml."""
    config = project.root / "patches" / "config.toml"
    text = config.read_text()
    config.write_text(text.replace('overlay = "overlay"\n', f'overlay = "overlay"\n{lines}', 1))
