"""`ensure_dataset`: build a data set once per parameter set, under a lock, with a stamp written last."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from overlaytool import REPO_ROOT, replace_file

from .catalog import MINI_SCENES

DEFAULT_SCENES = 4
DEFAULT_SAMPLES_PER_SCENE = 8
STAMP = ".synthdata-complete.json"
MARKER = ".synthdata-partial"


def source_digest() -> str:
    """Hash of the generator's own sources: a changed generator invalidates cached data sets."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def default_root(scenes: int, samples_per_scene: int, seed: int) -> Path:
    return REPO_ROOT / "data" / "synthetic" / f"scenes{scenes}-samples{samples_per_scene}-seed{seed}"


def _expected_stamp(root: Path, scenes: int, samples_per_scene: int, seed: int) -> dict:
    return {
        "scenes": scenes,
        "samples_per_scene": samples_per_scene,
        "seed": seed,
        "root": str(root),
        "generator": source_digest(),
    }


def _is_complete(root: Path, expected: dict) -> bool:
    try:
        return json.loads((root / STAMP).read_text()) == expected
    except (OSError, ValueError):
        return False


def ensure_dataset(
    out: Path | None = None,
    *,
    scenes: int = DEFAULT_SCENES,
    samples_per_scene: int = DEFAULT_SAMPLES_PER_SCENE,
    seed: int = 0,
    jobs: int | None = None,
) -> Path:
    """Return the root of a synthetic data set with these parameters, generating it if needed.

    `out=None` uses `<repo>/data/synthetic/<params>/`. A directory with a matching stamp is reused; one
    left half-written (or made by another generator version or at another location) is rebuilt. A
    non-empty directory that this generator did not create is refused, never deleted.
    """
    for name, value, low in (
        ("scenes", scenes, 1),
        ("samples_per_scene", samples_per_scene, 1),
        ("seed", seed, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if scenes > len(MINI_SCENES):
        raise ValueError(
            f"scenes must be in 1..{len(MINI_SCENES)} (the official v1.0-mini scenes), got {scenes}"
        )
    root = (Path(out) if out is not None else default_root(scenes, samples_per_scene, seed)).resolve()
    expected = _expected_stamp(root, scenes, samples_per_scene, seed)
    if _is_complete(root, expected):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(root, expected):
            return root
        if root.exists():
            ours = (root / MARKER).exists() or (root / STAMP).exists()
            if any(root.iterdir()) and not ours:
                raise FileExistsError(
                    f"{root} is not empty and was not made by synthdata; refusing to overwrite it"
                )
            shutil.rmtree(root)
        root.mkdir(parents=True)
        (root / MARKER).write_text("generation in progress or interrupted\n")
        from .generate import generate  # numpy: only where a data set is made

        generate(root, scenes, samples_per_scene, seed, jobs=jobs or min(2, os.cpu_count() or 1))
        (root / MARKER).unlink()
        replace_file(root / STAMP, json.dumps(expected, indent=1))
    return root
