"""What the scale case (:mod:`.scale`) holds the frame store against, each in a process of its own:
the read of the info file as upstream's dataset does it, and the frames of the per-frame reader.
``python -m loaderbench.nuscenes_size.scale_checks --read <info file>`` / ``--diffs '<json>'`` print
one tagged result line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

READ_TAG = "RESULT "


def read_once(ann_file: str) -> None:
    """Print (how, seconds) of one read of the info file as upstream's dataset reads it:
    ``mmcv.load`` (``pickle.load``, the garbage collector as the interpreter leaves it)."""
    from mmcv import load

    t0 = time.perf_counter()
    load(ann_file)
    print(READ_TAG + json.dumps(["mmcv.load", time.perf_counter() - t0]), flush=True)


def reference_read(ann_file: Path) -> tuple[float, str]:
    """(seconds, how) of :func:`read_once` in a process of its own (after its imports)."""
    how, seconds = _in_child("--read", str(ann_file))
    return seconds, how


def _in_child(*args: str, env: dict[str, str] | None = None) -> Any:
    """The tagged result of ``python -m loaderbench.nuscenes_size.scale_checks ARGS``."""
    cmd = [sys.executable, "-m", "loaderbench.nuscenes_size.scale_checks", *args]
    stdout = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(next(ln for ln in stdout.splitlines() if ln.startswith(READ_TAG))[len(READ_TAG) :])


def _same(a: Any, b: Any) -> bool:
    """Bit for bit: type, dtype, shape and bytes of arrays, recursively through lists."""
    import numpy as np

    if isinstance(a, np.ndarray):
        return (
            type(b) is np.ndarray and (a.dtype, a.shape) == (b.dtype, b.shape) and a.tobytes() == b.tobytes()
        )
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def count_diffs(spec: dict[str, Any]) -> None:
    """Print (frames, attributes that differ) between the store's frames and the per-frame reader's
    (``infos.read_frames``, the former code path): every attribute of every frame."""
    from dataclasses import fields

    from dali_streampetr.toolkit import load_frames, read_frames

    ann, root, classes = spec["ann_file"], spec["data_root"], spec["classes"]
    store, records = load_frames(ann, root, classes), read_frames(ann, root, classes)
    diffs = int(len(store) != len(records))
    for i, want in enumerate(records):
        got = store[i]
        diffs += sum(not _same(getattr(want, f.name), getattr(got, f.name)) for f in fields(want))
    print(READ_TAG + json.dumps([len(records), diffs]), flush=True)


def frame_diffs(ann_file: Path, data_root: Path, classes: list[str], store_dir: Path) -> tuple[int, int]:
    """(frames, differing attributes) of :func:`count_diffs` in a process of its own."""
    env = {**os.environ, "STREAMPETR_DALI_FRAME_STORES": str(store_dir)}
    spec = {"ann_file": str(ann_file), "data_root": str(data_root), "classes": classes}
    frames, diffs = _in_child("--diffs", json.dumps(spec), env=env)
    return frames, diffs


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--read":
        read_once(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--diffs":
        count_diffs(json.loads(sys.argv[2]))
    else:
        sys.exit("usage: python -m loaderbench.nuscenes_size.scale_checks --read FILE | --diffs JSON")
