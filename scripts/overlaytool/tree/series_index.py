"""The series applied to a private git index of the pinned tree (`.git/streampetr-dali/series.index`):
what `apply` will write, checked first, every patch with zero fuzz and zero offset.
"""

from __future__ import annotations

from pathlib import Path

from ..cache import mirror_path
from ..checkout.gitdir import state_dir
from ..errors import OverlayError
from ..gitcmd import git, git_out, tree_files
from ..overlay import Blob, overlay_blob
from ..patchfile import Patch, diagnose_patch
from ..targets import Target


def index_env(checkout: Path) -> dict[str, str]:
    """Environment selecting the private index the series is applied to."""
    return {"GIT_INDEX_FILE": str(state_dir(checkout) / "series.index")}


def build_result(target: Target, patches: list[Patch], overlay: dict[str, Path]) -> dict[str, Blob | None]:
    """Apply the series to a private index of the pinned tree; return path → content (None = deleted).
    Raises naming the patch, file, hunk and reason as soon as one does not fit exactly."""
    checkout = target.checkout
    env = index_env(checkout)
    git("read-tree", target.pin.commit, cwd=checkout, env=env)
    touched: set[str] = set()
    for number, patch in enumerate(patches, 1):
        problem = diagnose_patch(patch, lambda p: _index_blob(checkout, env, p))
        if problem is None:
            proc = git(
                "apply", "--cached", "--check", "-v", str(patch.path), cwd=checkout, env=env, check=False
            )
            if proc.returncode != 0 or "offset" in proc.stderr or "fuzz" in proc.stderr:
                problem = f"git apply refused it:\n{proc.stderr.strip()}"
        if problem is not None:
            raise OverlayError(
                f"Patch {number}/{len(patches)} {patch.name} does not apply to {target.label} "
                f"{target.pin.commit[:12]} with zero fuzz and zero offset.\n{problem}\n"
                f"{_upstream_history(target, patch)}\n"
                f"Nothing was changed in {checkout}."
            )
        git("apply", "--cached", str(patch.path), cwd=checkout, env=env)
        touched.update(fp.path for fp in patch.files)
        touched.update(fp.old_path for fp in patch.files if fp.old_path)
    left_out = [p for p in [*sorted(touched), *overlay] if any(p.startswith(f + "/") for f in target.outside)]
    if left_out:
        raise OverlayError(
            f"{left_out[0]} is in a folder {target.label}'s checkout leaves out (`outside` in "
            f"patches/config.toml: {', '.join(target.outside)}): another target is checked out "
            "there. Change it in that target's series or overlay instead.\n"
            f"Nothing was changed in {checkout}."
        )
    tracked = tree_files(checkout, target.pin.commit)
    result = {p: _index_blob(checkout, env, p) for p in sorted(touched)}
    for rel, path in overlay.items():
        if rel in tracked or rel in result:
            owner = "tracked by upstream" if rel in tracked else "created by a patch"
            raise OverlayError(
                f"overlay/{rel} would shadow {rel}, which is {owner} at {target.pin.commit[:12]}.\n"
                "overlay/ may only add new paths; change an upstream file with a patch instead."
            )
        result[rel] = overlay_blob(path)
    return result


def _index_blob(checkout: Path, env: dict[str, str], path: str) -> Blob | None:
    """Mode and content of `path` in the private index (None when the series deletes it)."""
    entry = git_out("ls-files", "--stage", "--", path, cwd=checkout, env=env)
    if not entry:
        return None
    mode, sha = entry.split()[:2]
    return Blob(mode, git("cat-file", "blob", sha, cwd=checkout, text=False).stdout)


def pin_blob(target: Target, rel: str) -> Blob | None:
    """Mode and content of `rel` in the pinned commit (None when upstream does not have it)."""
    entry = git_out("ls-tree", target.pin.commit, "--", rel, cwd=target.checkout)
    if not entry or entry.split()[1] != "blob":
        return None
    mode, _, sha = entry.split("\t")[0].split()
    return Blob(mode, git("cat-file", "blob", sha, cwd=target.checkout, text=False).stdout)


def _upstream_history(target: Target, patch: Patch) -> str:
    """Upstream commits (in the cache mirror) that touched the patch's files after the pin."""
    mirror = mirror_path(target.pin)
    paths = sorted({fp.path for fp in patch.files})
    proc = git(
        "log", "--format=  %h %ad %s", "--date=short", "--branches", "--not", target.pin.commit,
        "--", *paths, cwd=mirror, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        return "Upstream history is not available in the cache."
    listing = proc.stdout.rstrip() or "  (none in the cache)"
    return f"Upstream commits touching {', '.join(paths)} since the pin:\n{listing}"
