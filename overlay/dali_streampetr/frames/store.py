"""One frame store per info file and node (``<folder>/<digest>.frames``, :mod:`.store_file`): built
once by a child process (:mod:`.store_build`), then mapped read-only by every rank and run; the key,
the folder and the fallback are in docs/loader.md ("The frames at nuScenes size").

:class:`FrameStore` is the sequence the loader reads: ``frames[i]`` is a :class:`FrameView` with
:class:`.records.Frame`'s attributes, bit for bit, made on demand from read-only column slices."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .columns import KEEPS_EMPTY_SHAPE, REGULAR, SHARED
from .frame_errors import InfoSchemaError, StoreDamaged, StoreUntrusted, StoreUnwritable
from .records import Frame, frame_records, load_info_file, read_infos
from .store_file import check_folder, open_store
from .unpickle import gc_paused

STORE_FORMAT = 2  # 2: the digest covers the header; checked layout
FOLDER_ENV = "STREAMPETR_DALI_FRAME_STORES"
# the modules whose code decides what a store holds: a change to any of them makes a new key
# (this module only finds, opens and views a store: its key is its own, and changes with it)
CODE = (
    "records.py", "info_schema.py", "unpickle.py", "info_columns.py", "columns.py", "store_file.py",
    "store_build.py",
)  # fmt: skip
RESULT_TAG = "FRAME-STORE "  # the builder's last stdout line: this tag, then its result as JSON
logger = logging.getLogger("dali_streampetr")


def store_folder() -> Path:
    """``$STREAMPETR_DALI_FRAME_STORES``, else ``frame-stores`` in the project's cache (docs/loader.md)."""
    if override := os.environ.get(FOLDER_ENV):
        return Path(override).expanduser()
    if cache := os.environ.get("STREAMPETR_DALI_CACHE"):
        return Path(cache).expanduser() / "frame-stores"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "streampetr-dali" / "frame-stores"


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@functools.cache
def code_digest() -> str:
    """SHA-256 of the modules in :data:`CODE` (read once per process, at the first use)."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in CODE:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()


def store_key(ann_file: Path, class_names: Sequence[str], trusted: bool) -> dict[str, Any]:
    return {
        "format": STORE_FORMAT,
        "code": code_digest(),
        "info_sha256": file_sha256(ann_file),
        "class_names": list(class_names),
        "trusted_pickle": bool(trusted),
    }


def store_path(folder: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return folder / f"{digest}.frames"


ERRORS = {"InfoSchemaError": InfoSchemaError, "FileNotFoundError": FileNotFoundError,
          "StoreUntrusted": StoreUntrusted}  # fmt: skip


def ensure_store(ann_file: Path, class_names: Sequence[str], trusted: bool) -> tuple[dict, dict, Path, dict]:
    """(columns, meta, path, key) of the info file's store, the columns mapped read-only; built first
    when missing or bad. Raises what reading the info file raises, :class:`StoreUnwritable` or
    :class:`.store_file.StoreUntrusted`."""
    key = store_key(ann_file, class_names, trusted)
    path = store_path(store_folder(), key)
    try:
        check_folder(path.parent)
        return (*open_store(path, key), path, key)
    except (OSError, StoreDamaged):
        pass  # the builder looks again under the lock, and says why it rebuilds (or cannot)
    spec = {"ann_file": str(ann_file), "class_names": list(class_names), "trusted": trusted,
            "path": str(path), "key": key}  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}  # the child imports as we do
    proc = subprocess.run(
        [sys.executable, "-m", "dali_streampetr.frames.store_build", json.dumps(spec)],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    if not lines:
        raise RuntimeError(
            f"building the frame store of {ann_file} failed (exit {proc.returncode}, see the output above)"
        )
    result = json.loads(lines[-1][len(RESULT_TAG) :])
    if result.get("error") == "OSError":
        raise StoreUnwritable(f"cannot write the frame store {path}: {result['message']}")
    if "error" in result:
        raise ERRORS.get(result["error"], RuntimeError)(result["message"])
    if result["rebuilt_because"]:
        logger.warning(f"DALI loader: the frame store {path} {result['rebuilt_because']}: rebuilt it")
    elif result["built"]:
        logger.info(f"DALI loader: wrote the frame store {path} ({result['seconds']:.1f} s)")
    return (*open_store(path, key), path, key)


def load_frames(
    ann_file: str | Path, data_root: str | Path, class_names: Sequence[str], *, trusted_pickle: bool = False
) -> FrameStore:
    """The info file's frames, sorted by timestamp (stable) as upstream does: views of the node's frame
    store. Raises :class:`InfoSchemaError` for a pickle that is unreadable or malformed."""
    ann_file = Path(ann_file).absolute()
    if not ann_file.is_file():
        raise FileNotFoundError(f"info pickle not found: {ann_file}")
    try:
        columns, meta, path, key = ensure_store(ann_file, class_names, trusted_pickle)
        source = (path, key)
    except StoreUnwritable as exc:
        from .info_columns import info_columns  # only here: a training process never parses the pickle

        logger.warning(f"{exc}; the DALI loader keeps the frames of {ann_file} in its own process")
        with gc_paused():  # the parsed pickle's millions of objects need no collection
            data = load_info_file(ann_file, trusted_pickle=trusted_pickle)[0]
            columns, meta = info_columns(data, class_names, ann_file)
        source = None
    probe = FrameStore(columns, meta, PathResolver(None, None))[0].data_paths[0]
    return FrameStore(columns, meta, path_resolver(Path(data_root), probe), source)


def read_frames(
    ann_file: str | Path, data_root: str | Path, class_names: Sequence[str], *, trusted_pickle: bool = False
) -> list[Frame]:
    """The frames as Python objects, straight from the pickle (the reference the frame store's
    frames are tested against)."""
    infos = read_infos(ann_file, trusted_pickle=trusted_pickle)
    first_cam = next(iter(infos[0]["cams"].values()))
    return frame_records(infos, class_names, path_resolver(Path(data_root), str(first_cam["data_path"])))


# -- the frames as the loader reads them


class FrameStore(Sequence):
    """The frames, read from ``columns`` (as :func:`to_columns` made them, possibly file-mapped):
    ``frames[i]`` is a :class:`FrameView`; a slice gives a list of views."""

    def __init__(
        self,
        columns: Mapping[str, np.ndarray],
        meta: Mapping[str, Any],
        resolve: PathResolver,
        source: tuple[Path, Mapping[str, Any]] | None = None,
    ) -> None:
        self.columns, self.meta, self.resolve, self.source = dict(columns), dict(meta), resolve, source
        self.n_cams = int(meta["n_cams"])
        self.empty_shapes = [tuple(s) for s in meta["empty_shapes"]]
        self._len = len(self.columns["timestamp"])

    def __len__(self) -> int:
        return self._len

    def __reduce__(self):
        """A file-backed store pickles as its file (a spawned worker maps it again), else as data."""
        if self.source is None:
            return (FrameStore, (self.columns, self.meta, self.resolve))
        return (_reopen, (*self.source, self.meta, self.resolve))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [FrameView(self, i) for i in range(*index.indices(self._len))]
        i = int(index)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"frame index {index} out of range for {self._len} frames")
        return FrameView(self, i)

    def __iter__(self) -> Iterator[FrameView]:
        return (FrameView(self, i) for i in range(self._len))

    def string(self, index: int) -> str:
        offsets = self.columns["string_offsets"]
        raw = self.columns["string_values"][offsets[index] : offsets[index + 1]]
        return raw.tobytes().decode("utf-8", "surrogatepass")


def _reopen(path: Path, key: Mapping[str, Any], meta: Mapping[str, Any], resolve: PathResolver) -> FrameStore:
    columns, _ = open_store(path, key)
    return FrameStore(columns, meta, resolve, (path, key))


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _column(read: str, name: str) -> cached_property:
    """A :class:`FrameView` attribute: ``FrameView.<read>(name)``, read once."""
    return cached_property(lambda view: getattr(view, read)(name))


class FrameView:
    """One frame of a :class:`FrameStore`, with :class:`.records.Frame`'s attributes (see there), made
    when first read: arrays are read-only views of the store's columns (copies of nothing)."""

    __slots__ = ("_store", "_i", "__dict__")

    def __init__(self, store: FrameStore, i: int) -> None:
        self._store, self._i = store, i

    def __repr__(self) -> str:
        return f"FrameView({self._i}, token={self.token!r})"

    def _fixed(self, name: str) -> np.ndarray:
        row = self._store.columns[f"{name}_index"][self._i] if name in SHARED else self._i
        return _readonly(self._store.columns[name][row])

    def _strings(self, name: str) -> list[str]:
        return [self._store.string(int(j)) for j in self._store.columns[name][self._i]]

    def _string(self, name: str) -> str:
        return self._store.string(int(self._store.columns[name][self._i]))

    token = _column("_string", "token")
    scene_token = _column("_string", "scene_token")
    timestamp = cached_property(lambda view: float(view._store.columns["timestamp"][view._i]))
    has_sweeps = cached_property(lambda view: bool(view._store.columns["has_sweeps"][view._i]))
    cam_names = _column("_strings", "cam_names")
    data_paths = _column("_strings", "data_paths")

    @cached_property
    def img_paths(self) -> list[str]:
        return [self._store.resolve(p) for p in self.data_paths]

    img_timestamps = _column("_fixed", "img_timestamps")
    intrinsics = _column("_fixed", "intrinsics")
    extrinsics = _column("_fixed", "extrinsics")
    ego_pose = _column("_fixed", "ego_pose")
    ego_pose_inv = _column("_fixed", "ego_pose_inv")

    def _boxes(self, name: str) -> np.ndarray:
        a, b = self._store.columns["box_offsets"][self._i : self._i + 2]
        if a == b and name == "gt_labels":
            return np.array([])  # upstream's np.array([]) of a frame without boxes: float64
        return _readonly(self._store.columns[name][a:b])  # one label per box row

    gt_boxes = _column("_boxes", "gt_boxes")
    gt_labels = _column("_boxes", "gt_labels")

    def _per_cam(self, key: str) -> list[np.ndarray]:
        store, n_cams = self._store, self._store.n_cams
        offsets = store.columns["ann2d_offsets"][self._i * n_cams : (self._i + 1) * n_cams + 1]
        values = store.columns[key]
        shapes = store.columns[f"{key}_shape"][self._i] if key in KEEPS_EMPTY_SHAPE else None
        out = []
        for cam in range(n_cams):
            a, b = offsets[cam], offsets[cam + 1]
            if a < b:
                out.append(_readonly(values[a:b]))
            else:  # a new (writable) empty array: upstream passes these through untouched
                regular = shapes is None or shapes[cam] == REGULAR
                shape = values.shape[1:] if regular else store.empty_shapes[shapes[cam]]
                out.append(np.zeros((0, *shape) if regular else shape, dtype=values.dtype))
        return out

    bboxes2d = _column("_per_cam", "bboxes2d")
    labels2d = _column("_per_cam", "labels2d")
    centers2d = _column("_per_cam", "centers2d")
    depths = _column("_per_cam", "depths")


# -- where the images are


class PathResolver:
    """``resolver(data_path)`` -> absolute image path, by the rule :func:`path_resolver` picked
    (picklable, so a spawned worker resolves like the loader)."""

    def __init__(self, data_root: Path | None, skip: int | None) -> None:
        self.data_root, self.skip = data_root, skip  # data_root None: the path as is (upstream's rule)

    def __call__(self, path: str) -> str:
        if self.data_root is None:
            return os.path.abspath(path)
        if self.skip is None:
            return str((self.data_root / path).absolute())
        return str(self.data_root.joinpath(*Path(path).parts[self.skip :]).absolute())


def path_resolver(data_root: Path, probe: str) -> PathResolver:
    """Return ``data_path -> absolute path``.

    Upstream opens ``data_path`` relative to the working directory, where the converter wrote
    ``<data_root>/samples/...``. Here the first of these that exists for ``probe`` is used for all
    paths: the path as is (absolute or cwd-relative, upstream's rule), ``data_root/<path>``, then
    ``data_root/<path minus 1, 2, ... leading components>``.
    """
    parts = Path(probe).parts
    if Path(probe).is_absolute() or Path(probe).exists():
        return PathResolver(None, None)
    for skip in range(len(parts)):
        if (data_root.joinpath(*parts[skip:])).exists():
            return PathResolver(data_root, skip)
    return PathResolver(data_root, None)
