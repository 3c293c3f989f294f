"""A config the sweep could not compare: the exception (type, message, the raising file:line) and,
where the cause is known, what would make it comparable (docs/equivalence.md)."""

from __future__ import annotations

import linecache
import math
import os
import pickle
import re
import site
import sys
import traceback
from pathlib import Path
from typing import Any

from .original import ANN_TRAIN, REPO_ROOT


def _short(filename: str) -> str:
    """``filename`` relative to the project or to the site-packages folder holding it."""
    path = Path(filename)
    for base in (REPO_ROOT, *map(Path, site.getsitepackages()), *map(Path, sys.path)):
        if base.is_dir() and path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return filename


def train_scenes_needed(train_scenes: int) -> int | None:
    """The smallest ``--scenes`` of ``make_data`` whose train split has ``train_scenes`` scenes (the
    synthetic set interleaves val scenes), or None beyond the synthetic set's scenes."""
    from synthdata import MINI_SCENES

    count = 0
    for n, (_, split) in enumerate(MINI_SCENES, 1):
        count += split == "train"
        if count >= train_scenes:
            return n
    return None


def _groups_hint(sampler: Any) -> str:
    """Upstream's ``assert self.groups_num >= self.global_batch_size``: which data set size fits."""
    groups, wanted = int(sampler.groups_num), int(sampler.global_batch_size)
    text = (
        f"upstream's sequence sampler needs a sequence group per batch slot: {wanted} "
        f"({sampler.batch_size} samples per GPU x {sampler.num_replicas} rank(s)), the data set has {groups}"
    )
    try:
        scenes = len({info["scene_token"] for info in sampler.dataset.data_infos})
    except (AttributeError, KeyError, TypeError):
        return text
    per_scene = groups / max(scenes, 1)
    needed = math.ceil(wanted / per_scene) if per_scene else None
    text += f" ({scenes} scenes, {per_scene:g} groups each)"
    n = train_scenes_needed(needed) if needed else None
    if n is None:
        return (
            text + f"; {needed} train scenes would fit, more than the synthetic set holds: use `--data-root`"
        )
    return (
        text + f"; {needed} train scenes fit: `nox -s make_data -- --scenes {n}`, then "
        "`nox -s equivalence -- ... --data-root <the folder it prints>`"
    )


def _info_key_hint(key: object, data_root: Path | None) -> str | None:
    """A KeyError on a key the data set's infos lack: the fork reads what its own converter writes."""
    if data_root is None or not isinstance(key, str):
        return None
    ann = Path(data_root) / ANN_TRAIN
    try:
        infos = pickle.loads(ann.read_bytes())["infos"]
    except (OSError, pickle.UnpicklingError, KeyError, TypeError, EOFError):
        return None
    if not infos or key in infos[0]:
        return None
    return (
        f"the data set's infos ({ann.name} in {data_root}) have no key {key!r}, which this code reads: "
        "the fork's own converter writes it. Compare on a data set made by the fork's converter "
        f"(`--data-root`), or add the key to a copy of these infos: `--add-info-key {key}`"
    )


# what provides a file a data root lacks, by its folder (longest first)
DATA_PROVIDERS = (
    ("maps/expansion/", "the nuScenes map expansion (nuScenes-map-expansion-v1.3.zip, unpacked into maps/)"),
    ("maps/basemap/", "the nuScenes map expansion (nuScenes-map-expansion-v1.3.zip, unpacked into maps/)"),
    ("can_bus/", "the nuScenes CAN bus expansion (can_bus.zip, unpacked beside samples/)"),
    ("maps/", "the nuScenes maps (part of the nuScenes download)"),
    ("samples/", "the nuScenes camera and sensor files (the nuScenes download)"),
    ("sweeps/", "the nuScenes camera and sensor files (the nuScenes download)"),
)


def _missing_path(exc: BaseException) -> str | None:
    """The path a FileNotFoundError names: its ``filename``, or the quoted path of mmcv's message."""
    if getattr(exc, "filename", None):
        return str(exc.filename)
    found = re.search(r"""["']([^"']+)["']""", str(exc))
    return found.group(1) if found else None


def _missing_file_hint(exc: BaseException, data_root: Path | None) -> str | None:
    """A file not found: a ``_base_`` pointing into site-packages (N2), or a data file the data set
    lacks (N3), named with what provides it."""
    missing = _missing_path(exc)
    if missing is None:
        return None
    path = Path(missing)
    if "site-packages" in path.parts and "configs" in path.parts:
        return (
            f"the config builds a path from an installed package's __file__ ({_short(missing)} in "
            "site-packages), and the installed wheel has no configs/ folder: point that `_base_` at "
            "the pinned checkout's mmdetection3d/configs/ (a path relative to the config) instead"
        )
    if data_root is None:
        return None
    root = Path(os.path.abspath(data_root))  # not resolved: an --add-info-key copy links its folders
    try:
        rel = Path(os.path.normpath(root / path)).relative_to(root).as_posix()
    except ValueError:
        return None
    provider = next((what for folder, what in DATA_PROVIDERS if rel.startswith(folder)), None)
    provided = f"; {provider} provides it" if provider else ""
    entries = sorted(root.iterdir()) if root.is_dir() else []
    linked = next((e.resolve().parent for e in entries if e.is_symlink()), None)
    where = f"{root}, the --add-info-key copy of {linked}: add it there" if linked else str(root)
    return (
        f"the data set ({where}) has no {rel}{provided}; the synthetic set does not hold it: compare on a "
        "data root that does (`--data-root`)"
    )


def _origin(exc: BaseException) -> BaseException:
    """The exception a same-type re-raise wraps (mmcv's registry raises ``type(e)(f"{cls}: {e}")``
    from inside its ``except``): its frame is where the cause is."""
    while (inner := exc.__cause__ or exc.__context__) is not None and type(inner) is type(exc):
        exc = inner
    return exc


def not_comparable(exc: BaseException, data_root: Path | None = None) -> dict[str, Any]:
    """The ``not_comparable`` entry of a row: ``type``, ``message``, ``where`` (file:line of the
    raising frame, below a same-type re-raise), ``hint`` (or None). The frames are cleared afterwards."""
    origin = _origin(exc)
    frames = list(traceback.walk_tb(origin.__traceback__))
    where, hint, line = "?", None, ""
    if frames:
        frame, lineno = frames[-1]
        where = f"{_short(frame.f_code.co_filename)}:{lineno}"
        line = linecache.getline(frame.f_code.co_filename, lineno).strip()
        owner = frame.f_locals.get("self")
        if isinstance(origin, AssertionError) and "groups_num" in line and owner is not None:
            hint = _groups_hint(owner)
    if isinstance(origin, KeyError) and origin.args:
        hint = _info_key_hint(origin.args[0], data_root)
    if isinstance(origin, FileNotFoundError):
        hint = _missing_file_hint(origin, data_root)
    message = repr(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    if not str(origin):  # a bare assert: its source line says what failed
        message = f"{message.rstrip()} {line}".strip()
    for e in {id(exc): exc, id(origin): origin}.values():
        traceback.clear_frames(e.__traceback__)
    return {"type": type(exc).__name__, "message": message, "where": where, "hint": hint}
