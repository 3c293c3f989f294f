"""A small project for the rebase tests: two patched files, an overlay, and upstream targets that
move the patched files (into `src/`), move one and edit it, or move one and rewrite it."""

from __future__ import annotations

import json
from pathlib import Path

from test_apply import patched
from tooling_repos import TRAIN_PY, Project, commit_files, git, make_patch, tree_state

HEADER = "".join(f"# Model, part {i} of the header that every version keeps.\n" for i in range(1, 5))
MODEL = "".join(f"def layer_{i}(x):\n    return x + {i}\n\n" for i in range(1, 9)) + HEADER
BASE = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n", "pkg/model.py": MODEL}
OURS_MODEL = patched(MODEL, 5, "    return x * 2  # ours")


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
